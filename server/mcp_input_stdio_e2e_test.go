package server_test

// An upstream's requests for its caller's input over the transports whose
// one stream does not say which call asks — stdio and legacy HTTP+SSE —
// relayed to the caller only when they are provably its call's: the one
// request of the gateway in flight on that connection
// (internal/mcpupstream/attribution.go). The go-sdk v1.8.0 client as the
// caller; a go-sdk v1.8.0 server (streamAskServer) as the test binary over
// stdio and behind the go-sdk's SSE handler; server-everything over stdio.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// parkedEnv names the file streamAskServer's park tool appends to.
const parkedEnv = "FLOWDROP_TEST_PARKED"

// oneStreamEnv is a gateway (face sessions on) fronting streamAskServer
// over stdio (tools st.ask, st.sample, st.park) and over legacy SSE
// (ss.ask, ss.sample, ss.park), with cfg applied; parked is the file the
// stdio server's park tool writes.
type oneStreamEnv struct {
	env            *gatewaytest.Env
	parked, sseURL string
	policy         server.PolicyConfig // as started
}

func startOneStreamEnv(t *testing.T, cfg func(c *server.Config, sseURL string)) *oneStreamEnv {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := streamAskServer()
	sse := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		sse.CloseClientConnections()
		sse.Close()
	})
	e := &oneStreamEnv{parked: filepath.Join(t.TempDir(), "parked"), sseURL: sse.URL}
	key := sessionKeyFile(t)
	opts := []gatewaytest.Option{gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{
				"asks": {Path: self, Env: map[string]string{stdioUpstreamEnv: "asks", parkedEnv: e.parked}}}
			if cfg != nil {
				cfg(c, sse.URL)
			}
			e.policy = c.Policy
		})}
	for _, up := range []struct {
		prefix, url string
		transport   registry.MCPTransport
	}{{"st.", "stdio://asks", ""}, {"ss.", sse.URL, registry.MCPTransportSSE}} {
		for _, name := range []string{"ask", "sample", "park"} {
			opts = append(opts, gatewaytest.WithTool(func(string) registry.Tool {
				schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
				return registry.Tool{Name: up.prefix + name, InputSchema: schema,
					Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: up.url, Tool: name, Transport: up.transport}}}
			}))
		}
	}
	e.env = gatewaytest.Start(t, opts...)
	return e
}

// parkedCount is how many park calls the stdio server has seen.
func (e *oneStreamEnv) parkedCount() int {
	b, _ := os.ReadFile(e.parked)
	return strings.Count(string(b), "parked")
}

// TestMCPInputOneStreamRelay: over stdio and legacy SSE, on each revision
// before 2026-07-28, the upstream's elicitation and sampling reach the
// caller's handlers and the answers its tool, when the call is the only
// request in flight on the upstream connection; the audit line says what
// kind was relayed.
func TestMCPInputOneStreamRelay(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	e := startOneStreamEnv(t, func(c *server.Config, _ string) { c.Policy.Audit = server.AuditConfig{Path: audit} })
	ctx := testCtx(t)
	for _, prefix := range []string{"st.", "ss."} {
		for _, rev := range olderRevisions {
			t.Run(prefix+rev, func(t *testing.T) {
				a := &asker{name: "Ada"}
				cs := connectAsker(t, ctx, e.env.MCPURL, "key-a", rev, a.options(true, true), nil)
				if got, isErr := callText(t, ctx, cs, prefix+"ask"); isErr || got != "hello Ada" {
					t.Errorf("%sask: %q (isError %v), want hello Ada", prefix, got, isErr)
				}
				if got, isErr := callText(t, ctx, cs, prefix+"sample"); isErr || got != "model said 42" {
					t.Errorf("%ssample: %q (isError %v), want model said 42", prefix, got, isErr)
				}
				if got := strings.Join(a.seen(), ","); got != "elicit:Your name?,sample" {
					t.Errorf("the caller was asked %q, want the elicitation then the sampling", got)
				}
			})
		}
	}
	lines, raw := auditLines(t, e.env, audit)
	if strings.Contains(raw, "Ada") || strings.Contains(raw, "Your name?") {
		t.Errorf("the audit file holds a relayed request's or answer's content:\n%s", raw)
	}
	kinds := map[string]int{}
	for _, l := range lines {
		kinds[fmt.Sprint(l["tool"], l["input_relayed"])]++
	}
	for _, want := range []string{"st.ask[elicitation]", "st.sample[sampling]", "ss.ask[elicitation]", "ss.sample[sampling]"} {
		if kinds[want] != len(olderRevisions) {
			t.Errorf("audit lines by tool and input_relayed: %v, want %d of %s", kinds, len(olderRevisions), want)
		}
	}
}

// TestMCPInputOneStreamAmbiguous: with another caller's call in flight on
// the same stdio connection, an upstream's request for input cannot be
// told apart, so it reaches neither caller: the upstream is refused
// (CodeInputUnattributed, naming the count); once the other call ended
// and the upstream answered it, the request is relayed again.
func TestMCPInputOneStreamAmbiguous(t *testing.T) {
	e := startOneStreamEnv(t, nil)
	ctx := testCtx(t)
	a := &asker{name: "Ada"}
	csA := connectAsker(t, ctx, e.env.MCPURL, "key-a", "2025-06-18", a.options(true, true), nil)
	b := &asker{name: "Bea"}
	csB := connectAsker(t, ctx, e.env.MCPURL, "key-b", "2025-06-18", b.options(true, true), nil)
	// The stdio server runs before b parks on it (its first start may be slow).
	if got, isErr := callText(t, ctx, csA, "st.ask"); isErr || got != "hello Ada" {
		t.Fatalf("st.ask alone: %q (isError %v), want hello Ada", got, isErr)
	}
	parkCtx, unpark := context.WithCancel(ctx)
	parkDone := make(chan error, 1)
	go func() {
		_, err := csB.CallTool(parkCtx, &mcp.CallToolParams{Name: "st.park", Arguments: map[string]any{}})
		parkDone <- err
	}()
	if err := poll(5*time.Second, func() error {
		if e.parkedCount() == 0 {
			return fmt.Errorf("b's st.park has not reached the stdio server")
		}
		return nil
	}); err != nil {
		unpark()
		t.Fatal(err)
	}
	got, isErr := callText(t, ctx, csA, "st.ask")
	if !isErr || !strings.Contains(got, "ambiguous: 2 requests") || !strings.Contains(got, fmt.Sprint(mcpupstream.CodeInputUnattributed)) {
		t.Errorf("st.ask beside b's parked call: %q (isError %v), want the upstream refused as ambiguous (2 requests, code %d)",
			got, isErr, mcpupstream.CodeInputUnattributed)
	}
	unpark()
	<-parkDone
	if n := len(a.seen()) + len(b.seen()); n != 1 {
		t.Errorf("the callers were asked %v and %v; want only a's first call asked", a.seen(), b.seen())
	}
	// The go-sdk server answers a cancelled call, which ends it in flight.
	if err := poll(5*time.Second, func() error {
		if got, isErr := callText(t, ctx, csA, "st.ask"); isErr || got != "hello Ada" {
			return fmt.Errorf("st.ask after b's call ended: %q (isError %v), want hello Ada", got, isErr)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if got := a.seen(); len(got) != 2 {
		t.Errorf("a was asked %v, want twice (its call alone, before and after)", got)
	}
}

// TestMCPInputOneStreamRefusals: a caller that declared neither kind is
// not asked and the upstream's tool sees a refusal naming the capability;
// a kind the policy forbids is not declared to the upstream session, so
// the upstream's SDK does not send it.
func TestMCPInputOneStreamRefusals(t *testing.T) {
	t.Run("no-capability", func(t *testing.T) {
		e := startOneStreamEnv(t, nil)
		ctx := testCtx(t)
		a := &asker{name: "Ada"}
		cs := connectAsker(t, ctx, e.env.MCPURL, "key-a", "2025-06-18", a.options(false, false), nil)
		for _, tool := range []string{"st.ask", "ss.ask", "st.sample", "ss.sample"} {
			got, isErr := callText(t, ctx, cs, tool)
			if !isErr || !strings.Contains(got, "did not declare") {
				t.Errorf("%s from a caller declaring nothing: %q (isError %v), want the upstream refused for the missing capability", tool, got, isErr)
			}
		}
		if got := a.seen(); len(got) != 0 {
			t.Errorf("the caller was asked %v", got)
		}
		// A gRPC caller is the one call in flight, yet has no stream to be
		// asked on: the upstream is told so.
		for _, tool := range []string{"st.ask", "ss.ask"} {
			res, err := e.env.Client.InvokeTool(withKeyCtx(ctx, "key-a"), &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, map[string]any{})})
			if err != nil || !res.GetIsError() || !strings.Contains(res.GetResult().GetStringValue(), "cannot be asked for input") {
				t.Errorf("%s over gRPC: %v, %v; want the upstream's tool error, having been refused (no caller to ask)", tool, res, err)
			}
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		e := startOneStreamEnv(t, func(c *server.Config, sseURL string) {
			c.Policy.MCPUpstreams.Input.Forbid = map[string][]string{"stdio://asks": {"elicitation"}, sseURL: {"sampling"}}
		})
		ctx := testCtx(t)
		a := &asker{name: "Ada"}
		cs := connectAsker(t, ctx, e.env.MCPURL, "key-a", "2025-06-18", a.options(true, true), nil)
		for _, c := range []struct{ tool, reason, want string }{
			{"st.ask", "elicitation forbidden: the stdio session did not declare it, so the upstream's SDK does not ask", "client does not support elicitation"},
			{"ss.sample", "sampling forbidden: the go-sdk server asks undeclared, and the gateway refuses it by policy", "policy forbids"},
			{"st.sample", "sampling allowed for the stdio upstream", "model said 42"},
			{"ss.ask", "elicitation allowed for the SSE upstream", "hello Ada"},
		} {
			got, isErr := callText(t, ctx, cs, c.tool)
			if !strings.Contains(got, c.want) || isErr != strings.HasPrefix(got, "upstream got") {
				t.Errorf("%s (%s): %q (isError %v), want %q", c.tool, c.reason, got, isErr, c.want)
			}
		}
		if got := strings.Join(a.seen(), ","); got != "sample,elicit:Your name?" {
			t.Errorf("the caller was asked %q, want only st.sample's sampling and ss.ask's elicitation", got)
		}
	})
}

// TestMCPInputPolicyReload: a reload that forbids a kind makes the
// upstream sessions declaring it again, so the upstream's own SDK sees the
// caller cannot be asked (not only the gateway's refusal per request); a
// reload that allows it again makes them declare it again.
func TestMCPInputPolicyReload(t *testing.T) {
	e := startOneStreamEnv(t, nil)
	ctx := testCtx(t)
	a := &asker{name: "Ada"}
	cs := connectAsker(t, ctx, e.env.MCPURL, "key-a", "2025-06-18", a.options(true, true), nil)
	reload := func(forbid map[string][]string) {
		t.Helper()
		next := e.policy
		next.MCPUpstreams.Input.Forbid = forbid
		if err := e.env.Gateway.ReloadPolicy(next); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
	for _, step := range []struct {
		name, reason string
		forbid       map[string][]string
		want         string
	}{
		{"allowed", "the sessions are made declaring elicitation", nil, "hello Ada"},
		{"forbidden", "the sessions are made again without it: the upstream's SDK refuses to ask (a per-request refusal would say the policy forbids it)",
			map[string][]string{"stdio://asks": {"elicitation"}, e.sseURL: {"elicitation"}}, "upstream got: client does not support elicitation"},
		{"allowed-again", "the sessions are made again declaring it", map[string][]string{}, "hello Ada"},
	} {
		if step.forbid != nil {
			reload(step.forbid)
		}
		for _, tool := range []string{"st.ask", "ss.ask"} {
			if got, _ := callText(t, ctx, cs, tool); got != step.want {
				t.Errorf("%s, %s (%s): %q, want %q", step.name, tool, step.reason, got, step.want)
			}
		}
	}
	if got := len(a.seen()); got != 4 {
		t.Errorf("the caller was asked %v, want 4 times (each tool while allowed)", a.seen())
	}
}

// TestMCPInputStdioRoundsNotDeclared: a stdio upstream on 2026-07-28
// would ask in rounds, which the gateway does not relay over one stream:
// the call's _meta declares no input to it, though the session declares
// elicitation and sampling for the revisions before.
func TestMCPInputStdioRoundsNotDeclared(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.MCPUpstreams.Input.KeyFiles = []string{sessionKeyFile(t)}
			c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"caps": {Path: self, Env: map[string]string{stdioUpstreamEnv: "caps"}}}
		}),
		gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: "st.caps", InputSchema: schema, Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "stdio://caps", Tool: "caps"}}}
		}))
	ctx := testCtx(t)
	a := &asker{name: "Ada"}
	cs := connectAsker(t, ctx, env.MCPURL, "key-a", "2025-06-18", a.options(true, true), nil)
	if got, isErr := callText(t, ctx, cs, "st.caps"); isErr || got != `2026-07-28 {"roots":{"listChanged":true}}` {
		t.Errorf("st.caps: %q (isError %v), want the 2026-07-28 call declaring roots only", got, isErr)
	}
}

// TestMCPInputEverythingStdio: server-everything over stdio asks the
// caller through the gateway (trigger-elicitation-request,
// trigger-sampling-request, which it offers only to a session declaring
// the kind) and the answers reach its tools.
func TestMCPInputEverythingStdio(t *testing.T) {
	node, script := everythingNode(t)
	key := sessionKeyFile(t)
	tool := func(name, upstream string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema,
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "stdio://everything", Tool: upstream}}}
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
		}),
		tool("st_elicit", "trigger-elicitation-request"), tool("st_sample", "trigger-sampling-request"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	a := &asker{name: "Ada"}
	cs := connectAsker(t, ctx, env.MCPURL, "key-a", "2025-11-25", a.options(true, true), nil)
	// The first call starts node, which may take seconds on a loaded machine.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "st_elicit", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); res.IsError || !strings.Contains(got, "- Name: Ada") {
		t.Errorf("st_elicit: %q (isError %v), want the caller's answer (Name: Ada)", got, res.IsError)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "st_sample", Arguments: map[string]any{"prompt": "six times seven"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); res.IsError || !strings.Contains(got, `"text": "42"`) {
		t.Errorf("st_sample: %q (isError %v), want the caller's model's answer", got, res.IsError)
	}
	if got := strings.Join(a.seen(), ","); !strings.HasPrefix(got, "elicit:Please provide inputs") || !strings.HasSuffix(got, ",sample") {
		t.Errorf("the caller was asked %q, want server-everything's elicitation then its sampling", got)
	}
}
