package server_test

//lint:file-ignore SA1019 sampling is deprecated by SEP-2577 (2026-07-28) yet still asked for by upstreams on the revisions before it; the gateway relays it

// An upstream's requests for its caller's input before 2026-07-28
// (elicitation/create, sampling/createMessage on the call's response
// stream) relayed to the caller on its own stream of the call, and its
// answer back (server/mcpapi/relay.go, server/backend/mcpinput.go): a
// go-sdk v1.8.0 upstream held to the older revisions whose tools call
// ServerSession.Elicit / CreateMessage mid-call, the go-sdk v1.8.0 client
// as the caller, over real HTTP on 127.0.0.1; two replicas on a real
// redis-server; raw HTTP for what the client never sends.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// olderRevisions are the revisions whose upstreams ask on the stream.
var olderRevisions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// startStreamAskUpstream is a stateful go-sdk v1.8.0 upstream serving only
// the revisions before 2026-07-28 (so its tools ask on the call's stream,
// not in rounds): "ask" elicits a name, "sample" asks the caller's model,
// "big" elicits with a message over the gateway's bound. A tool whose
// request fails answers isError with the error it got.
func startStreamAskUpstream(t *testing.T) string {
	t.Helper()
	srv := streamAskServer()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		up.CloseClientConnections()
		up.Close()
	})
	return up.URL
}

// streamAskServer is startStreamAskUpstream's server, on any transport;
// its tool "park" (mcp_input_stdio_e2e_test.go) waits for its call's end,
// having appended a line to the file parkedEnv names, if any.
func streamAskServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asks-on-stream", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: olderRevisions})
	fail := func(err error) (*mcp.CallToolResult, any, error) {
		msg := "upstream got: " + err.Error()
		if rpc := (*jsonrpc.Error)(nil); errors.As(err, &rpc) {
			msg += fmt.Sprintf(" (code %d)", rpc.Code)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil, nil
	}
	text := func(s string) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil, nil
	}
	elicit := func(ctx context.Context, req *mcp.CallToolRequest, msg string) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return fail(err)
		}
		if res.Action != "accept" {
			return text("declined")
		}
		name, _ := res.Content["name"].(string)
		return text("hello " + name)
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "Asks the user's name."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return elicit(ctx, req, "Your name?")
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "big", Description: "Asks at length."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return elicit(ctx, req, strings.Repeat("x", pipeline.InputMaxRequestBytes+1))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the caller's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is six times seven?"}}}})
			if err != nil {
				return fail(err)
			}
			tc, _ := res.Content.(*mcp.TextContent)
			if tc == nil {
				return fail(fmt.Errorf("no text"))
			}
			return text("model said " + tc.Text)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "park", Description: "Waits for its call's end."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if f, err := os.OpenFile(os.Getenv(parkedEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(f, "parked")
				f.Close()
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return srv
}

// streamAskTools registers the upstream's tools as up.ask, up.sample,
// up.big, each bounded by timeout (0: the default).
func streamAskTools(url string, timeout time.Duration) []gatewaytest.Option {
	var out []gatewaytest.Option
	for _, name := range []string{"ask", "sample", "big"} {
		out = append(out, gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: "up." + name, InputSchema: schema, Timeout: timeout,
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: name}}}
		}))
	}
	return out
}

// asker is a caller's handlers: what it was asked, and its answers.
type asker struct {
	mu    sync.Mutex
	asked []string
	// name is the elicitation's answer; hold, when set, makes the
	// elicitation handler wait until its context ends (noting it) or the
	// test releases it.
	name      string
	hold      bool
	cancelled chan struct{}
	release   chan struct{}
}

func (a *asker) note(s string) {
	a.mu.Lock()
	a.asked = append(a.asked, s)
	a.mu.Unlock()
}

func (a *asker) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// options are client options declaring elicitation and/or sampling.
func (a *asker) options(elicit, sample bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{}
	if elicit {
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.note("elicit:" + req.Params.Message)
			if a.hold {
				select {
				case <-ctx.Done():
					close(a.cancelled)
					return nil, ctx.Err()
				case <-a.release:
					return nil, errors.New("released by the test")
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": a.name}}, nil
		}
	}
	if sample {
		o.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.note("sample")
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "42"}}, nil
		}
	}
	return o
}

// connectAsker is the go-sdk client on rev with o, to url with API key
// key; rt, when set, is the transport under the key header.
func connectAsker(t *testing.T, ctx context.Context, url, key, rev string, o *mcp.ClientOptions, rt func(http.RoundTripper) http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	var h http.Header
	if key != "" {
		h = http.Header{"X-Api-Key": {key}}
	}
	hc := httpClient(t, h)
	if rt != nil {
		hc.Transport = rt(hc.Transport)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "v0"}, o).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// streamInputEnv is a gateway fronting a fresh stream-asking upstream,
// with face sessions (key files) unless noKeys, its tools bounded by
// timeout (0: the default), and cfg applied.
func streamInputEnv(t *testing.T, noKeys bool, timeout time.Duration, cfg func(c *server.Config, upstream string)) *gatewaytest.Env {
	t.Helper()
	up := startStreamAskUpstream(t)
	key := sessionKeyFile(t)
	opts := append([]gatewaytest.Option{gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
		gatewaytest.WithConfig(func(c *server.Config) {
			if !noKeys {
				c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			}
			if cfg != nil {
				cfg(c, up)
			}
		})}, streamAskTools(up, timeout)...)
	return gatewaytest.Start(t, opts...)
}

func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return resultText(res), res.IsError
}

// TestMCPInputStreamRelay: on each revision before 2026-07-28 the
// upstream's elicitation and sampling reach the caller's handlers and
// their answers the upstream's tool, whose result reaches the caller; the
// audit line says what kinds were relayed, never what.
func TestMCPInputStreamRelay(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	env := streamInputEnv(t, false, 0, func(c *server.Config, _ string) { c.Policy.Audit = server.AuditConfig{Path: audit} })
	ctx := testCtx(t)
	for _, rev := range olderRevisions {
		t.Run(rev, func(t *testing.T) {
			a := &asker{name: "Ada"}
			cs := connectAsker(t, ctx, env.MCPURL, "key-a", rev, a.options(true, true), nil)
			if got, isErr := callText(t, ctx, cs, "up.ask"); isErr || got != "hello Ada" {
				t.Errorf("up.ask: %q (isError %v), want hello Ada", got, isErr)
			}
			if got, isErr := callText(t, ctx, cs, "up.sample"); isErr || got != "model said 42" {
				t.Errorf("up.sample: %q (isError %v), want model said 42", got, isErr)
			}
			if got := strings.Join(a.seen(), ","); got != "elicit:Your name?,sample" {
				t.Errorf("the caller was asked %q, want the elicitation then the sampling", got)
			}
		})
	}
	lines, raw := auditLines(t, env, audit)
	if strings.Contains(raw, "Ada") || strings.Contains(raw, "Your name?") || strings.Contains(raw, "six times") {
		t.Errorf("the audit file holds a relayed request's or answer's content:\n%s", raw)
	}
	kinds := map[string]int{}
	for _, l := range lines {
		if l["tool"] == "up.ask" || l["tool"] == "up.sample" {
			kinds[fmt.Sprint(l["tool"], l["input_relayed"])]++
		}
	}
	if kinds["up.ask[elicitation]"] != len(olderRevisions) || kinds["up.sample[sampling]"] != len(olderRevisions) {
		t.Errorf("audit lines by tool and input_relayed: %v, want %d of up.ask [elicitation] and of up.sample [sampling]", kinds, len(olderRevisions))
	}
}

// TestMCPInputStreamRefusals: each refusal reaches the upstream as its
// request's error (the tool's isError result quotes it) and the caller is
// not asked; the call itself goes on as the upstream decides.
func TestMCPInputStreamRefusals(t *testing.T) {
	ctx := testCtx(t)
	rows := []struct {
		name, reason string
		noKeys       bool
		forbid       []string
		elicit       bool
		tool         string
		want         string
	}{
		{"no capability", "the caller's session declared sampling only", false, nil, false, "up.ask",
			"the caller did not declare the elicitation capability"},
		{"no session", "without key files no face session is minted: nobody can be asked", true, nil, true, "up.ask",
			"this call's caller cannot be asked for input through the gateway"},
		{"forbidden", "mcp_upstreams.input.forbid: the gateway's session does not declare elicitation, so the upstream's SDK does not ask", false,
			[]string{pipeline.InputElicitation}, true, "up.ask", "client does not support elicitation"},
		{"oversize request", "the upstream's request is over pipeline.InputMaxRequestBytes", false, nil, true, "up.big",
			"over the gateway's bound"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			env := streamInputEnv(t, row.noKeys, 0, func(c *server.Config, up string) {
				if row.forbid != nil {
					c.Policy.MCPUpstreams.Input.Forbid = map[string][]string{up: row.forbid}
				}
			})
			a := &asker{name: "Ada"}
			cs := connectAsker(t, ctx, env.MCPURL, "key-a", "2025-11-25", a.options(row.elicit, true), nil)
			got, isErr := callText(t, ctx, cs, row.tool)
			if !isErr || !strings.Contains(got, row.want) {
				t.Errorf("%s: %q (isError %v), want the upstream's error saying %q (%s)", row.tool, got, isErr, row.want, row.reason)
			}
			if len(a.seen()) != 0 {
				t.Errorf("the caller was asked %v (%s)", a.seen(), row.reason)
			}
			if row.forbid != nil {
				// Only the forbidden kind: sampling is still relayed.
				if got, isErr := callText(t, ctx, cs, "up.sample"); isErr || got != "model said 42" {
					t.Errorf("up.sample with elicitation forbidden: %q (isError %v), want model said 42", got, isErr)
				}
			}
		})
	}
	t.Run("wait ends", func(t *testing.T) {
		// The call's deadline ends the wait before pipeline.InputRelayMaxWait
		// (the same path): the caller is told its request is cancelled
		// (its handler's context ends) and the upstream gets an error.
		env := streamInputEnv(t, false, 2*time.Second, nil)
		a := &asker{hold: true, cancelled: make(chan struct{}), release: make(chan struct{})}
		cs := connectAsker(t, ctx, env.MCPURL, "key-a", "2025-11-25", a.options(true, false), nil)
		t.Cleanup(func() { close(a.release) }) // before the session's close (cleanups run last first)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.ask", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Errorf("up.ask: %q, want a failure once the wait ended", resultText(res))
		}
		// The call has answered: the notification came before the answer on
		// the same stream, so the handler has been told by now or never.
		select {
		case <-a.cancelled:
		case <-time.After(10 * time.Second):
			t.Error("the caller's elicitation handler was not told its request was cancelled")
		}
	})
}

// rawSSE reads a POST's event stream one JSON-RPC message at a time.
type rawSSE struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (s *rawSSE) next(t *testing.T) map[string]any {
	t.Helper()
	for s.sc.Scan() {
		if d, ok := strings.CutPrefix(s.sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("event %q: %v", d, err)
			}
			return m
		}
	}
	t.Fatalf("the stream ended: %v", s.sc.Err())
	return nil
}

// TestMCPInputStreamAnswers: a caller's answer POST (raw HTTP) is taken
// only from the caller the request was relayed to and only once: another
// caller's answer and an unknown id are 400 and the call still waits; the
// caller's own is 202 and the call's result follows on its stream.
func TestMCPInputStreamAnswers(t *testing.T) {
	env := streamInputEnv(t, false, 0, nil)
	ctx := testCtx(t)
	code, h, body := mcpDo(t, http.MethodPost, env.MCPURL, http.Header{"X-Api-Key": {"key-a"}}, sessionInitialize("2025-11-25"))
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", code, sid, body)
	}
	head := func(key string) http.Header {
		return http.Header{"X-Api-Key": {key}, "Mcp-Protocol-Version": {"2025-11-25"}, "Mcp-Session-Id": {sid}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.MCPURL,
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up.ask","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = head("key-a")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := &rawSSE{resp: resp, sc: bufio.NewScanner(resp.Body)}
	ask := stream.next(t)
	id, _ := ask["id"].(string)
	if ask["method"] != "elicitation/create" || !strings.HasPrefix(id, "flowdrop-input-") {
		t.Fatalf("first event %v, want the relayed elicitation/create under the gateway's id", ask)
	}
	answer := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}})
		return b
	}
	post := func(key string, b []byte) (int, string) {
		hd := head(key)
		if key != "key-a" {
			hd.Del("Mcp-Session-Id") // a's session is not b's to present
		}
		code, raw, _ := mcpPost(t, env.MCPURL, hd, b)
		return code, raw
	}
	if code, raw := post("key-b", answer(id)); code != http.StatusBadRequest || !strings.Contains(raw, "no request of this gateway awaits this answer") {
		t.Errorf("another caller's answer: HTTP %d %s, want 400", code, raw)
	}
	if code, raw := post("key-a", answer("flowdrop-input-"+strings.Repeat("0", 24)+"-x")); code != http.StatusBadRequest {
		t.Errorf("an unknown id: HTTP %d %s, want 400", code, raw)
	}
	if code, raw := post("key-a", answer(id)); code != http.StatusAccepted {
		t.Fatalf("the caller's own answer: HTTP %d %s, want 202", code, raw)
	}
	if code, _ := post("key-a", answer(id)); code != http.StatusBadRequest {
		t.Errorf("the same answer again: HTTP %d, want 400 (answered once)", code)
	}
	res := stream.next(t)
	got, _ := json.Marshal(res["result"])
	if res["id"] != float64(9) || !bytes.Contains(got, []byte("hello Ada")) {
		t.Errorf("the call's answer %v, want its result saying hello Ada", res)
	}
}

// TestMCPInputStreamAcrossReplicas: the call runs on replica A; the
// caller's answer POST goes to B (a balancer sends every response there),
// which carries it to A over a real redis-server.
func TestMCPInputStreamAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	up := startStreamAskUpstream(t)
	key := sessionKeyFile(t)
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, append([]gatewaytest.Option{gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			})}, streamAskTools(up, 0)...)...)
	}
	a, b := replica(), replica()
	other, err := url.Parse(b.MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	var moved sync.Map
	ask := &asker{name: "Grace"}
	cs := connectAsker(t, ctx, a.MCPURL, "key-a", "2025-11-25", ask.options(true, true), func(next http.RoundTripper) http.RoundTripper {
		return answersTo{next: next, other: other, moved: &moved}
	})
	if got, isErr := callText(t, ctx, cs, "up.ask"); isErr || got != "hello Grace" {
		t.Errorf("up.ask: %q (isError %v), want hello Grace", got, isErr)
	}
	if got, isErr := callText(t, ctx, cs, "up.sample"); isErr || got != "model said 42" {
		t.Errorf("up.sample: %q (isError %v), want model said 42", got, isErr)
	}
	n := 0
	moved.Range(func(_, _ any) bool { n++; return true })
	if n != 2 {
		t.Errorf("%d answers went to replica B, want 2: the test did not exercise the fleet", n)
	}
}

// answersTo sends a POST holding a JSON-RPC response (a caller's answer)
// to other, every other request where it was going.
type answersTo struct {
	next  http.RoundTripper
	other *url.URL
	moved *sync.Map
}

func (b answersTo) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Method != http.MethodPost {
		return b.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(`"flowdrop-input-`)) && !bytes.Contains(body, []byte(`"method"`)) {
		r.URL.Scheme, r.URL.Host, r.Host = b.other.Scheme, b.other.Host, b.other.Host
		b.moved.Store(string(body), true)
	}
	return b.next.RoundTrip(r)
}

// TestMCPInputRoundsToStream: a 2026-07-28 upstream's rounds
// (InputRequiredResult, server/mcp_input_e2e_test.go's upstream) asked of
// a 2025-11-25 caller on its call's stream, each answer sent back with
// the upstream's state, until the upstream answers; authentication off
// (the anonymous caller has a session too); a caller that cannot answer
// ends the call input-unsupported, an upstream that never stops asking
// input-too-large.
func TestMCPInputRoundsToStream(t *testing.T) {
	ctx := testCtx(t)
	key := sessionKeyFile(t)
	env, u := startInputEnv(t, ctx, func(c *server.Config, _ string) { c.Policy.MCPUpstreams.Input.KeyFiles = []string{key} })
	a := &asker{name: "Ada"}
	cs := connectAsker(t, ctx, env.MCPURL, "", "2025-11-25", a.options(true, true), nil)
	if got, isErr := callText(t, ctx, cs, "up.confirm"); isErr || got != "hello Ada" {
		t.Errorf("up.confirm: %q (isError %v), want hello Ada", got, isErr)
	}
	if got, isErr := callText(t, ctx, cs, "up.sample"); isErr || got != "model said 42" {
		t.Errorf("up.sample: %q (isError %v), want model said 42", got, isErr)
	}
	if got := fmt.Sprint(u.seen()); got != "[ "+upstreamState+"  "+upstreamState+"]" {
		t.Errorf("the upstream's calls carried states %q, want each retry to carry its own state", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.nag", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta["flowdrop/reason"] != "input-too-large" {
		t.Errorf("up.nag: %v %+v, want an isError result with reason input-too-large", err, res)
	}
	mute := &asker{}
	cs = connectAsker(t, ctx, env.MCPURL, "", "2025-11-25", mute.options(false, true), nil)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.confirm", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta["flowdrop/reason"] != "input-unsupported" || !strings.Contains(resultText(res), "did not declare the elicitation capability") {
		t.Errorf("up.confirm for a caller without elicitation: %v %+v, want input-unsupported naming the capability", err, res)
	}
}
