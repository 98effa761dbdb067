package server_test

//lint:file-ignore SA1019 sampling and roots are deprecated by SEP-2577 (2026-07-28) yet still asked for by upstreams during the deprecation window; the gateway relays them

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// upstreamState is the requestState the input upstream gives its rounds:
// the gateway must send it back to it, and never show it to a caller.
const upstreamState = "upstream-own-state-1"

// inputUpstream is a stateless go-sdk v1.8.0 MCP server (2026-07-28 is
// served statelessly) whose tools ask their caller for input the multi
// round-trip way (SEP-2322): "confirm" elicits a name, "sample" asks for a
// sampled message; each answers once the retry carries the response and
// the upstream's own state. states records the requestState each call
// carried ("" on a first call).
type inputUpstream struct {
	mu     sync.Mutex
	states []string
}

func (u *inputUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.states...)
}

func (u *inputUpstream) serve(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	record := func(req *mcp.CallToolRequest) {
		u.mu.Lock()
		u.states = append(u.states, req.Params.RequestState)
		u.mu.Unlock()
	}
	fail := func(msg string) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm", Description: "Asks the user's name."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(req)
			resp, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{RequestState: upstreamState, InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message: "Your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
			}
			if req.Params.RequestState != upstreamState {
				return fail("the retry carried state " + req.Params.RequestState)
			}
			if resp.Action != "accept" {
				return fail("declined")
			}
			name, _ := resp.Content["name"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the client's model."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(req)
			// The SDK decodes a sampling answer as the tools-enabled form.
			resp, ok := req.Params.InputResponses["s"].(*mcp.CreateMessageWithToolsResult)
			if !ok {
				return &mcp.CallToolResult{RequestState: upstreamState, InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{
					MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "What is six times seven?"}}}}}}, nil, nil
			}
			if req.Params.RequestState != upstreamState {
				return fail("the retry carried state " + req.Params.RequestState)
			}
			var text *mcp.TextContent
			if len(resp.Content) == 1 {
				text, _ = resp.Content[0].(*mcp.TextContent)
			}
			if text == nil {
				return fail("no text")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said " + text.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "nag", Description: "Asks again, whatever the answer."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(req)
			return &mcp.CallToolResult{RequestState: upstreamState, InputRequests: mcp.InputRequestMap{"again": &mcp.ElicitParams{
				Message: "Again?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() {
		up.CloseClientConnections()
		up.Close()
	})
	return up.URL
}

// startInputEnv is a gateway fronting a fresh input upstream as up.confirm
// and up.sample, with cfg applied (given the upstream's URL).
func startInputEnv(t *testing.T, ctx context.Context, cfg func(c *server.Config, url string)) (*gatewaytest.Env, *inputUpstream) {
	t.Helper()
	u := &inputUpstream{}
	url := u.serve(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		if cfg != nil {
			cfg(c, url)
		}
	}))
	schema, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"confirm", "sample", "nag"} {
		tool := &gatewayv1.Tool{Name: "up." + name, InputSchema: schema,
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: url, Tool: name}}}}
		if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	return env, u
}

// inputClient connects a go-sdk client on 2026-07-28 whose handlers answer
// elicitation (name "Ada") and sampling ("42") when given; its
// multi round-trip middleware (on by default) fulfils input requests and
// retries.
func inputClient(t *testing.T, ctx context.Context, env *gatewaytest.Env, elicit, sample bool, asked *[]string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		*asked = append(*asked, s)
		mu.Unlock()
	}
	if elicit {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			note(req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	}
	if sample {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
				note(tc.Text)
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "42"}}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.MCPURL, HTTPClient: httpClient(t, nil), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPInputRoundsRelay: an upstream tool's request for its caller's
// input (2026-07-28 multi round-trip) reaches a go-sdk caller that can
// answer it, on the fast path and the SDK's path, for elicitation and
// sampling; the caller's answer reaches the upstream with the upstream's
// own state (never shown to the caller: the caller carries the gateway's
// sealed state), and the call completes with the upstream's answer.
func TestMCPInputRoundsRelay(t *testing.T) {
	t.Parallel()
	for _, path := range []struct {
		name    string
		sdkOnly bool
	}{{"fast path", false}, {"SDK path", true}} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			env, u := startInputEnv(t, ctx, func(c *server.Config, _ string) { c.MCP.SDKOnly = path.sdkOnly })
			var asked []string
			cs := inputClient(t, ctx, env, true, true, &asked)
			for _, row := range []struct {
				tool, reason, want, asked string
			}{
				{"up.confirm", "elicitation: the form reaches the caller, its answer the upstream", "hello Ada", "Your name?"},
				{"up.sample", "sampling: the request reaches the caller's model, its message the upstream", "model said 42", "What is six times seven?"},
			} {
				asked = nil
				before := len(u.seen())
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: row.tool, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v (%s)", row.tool, err, res, row.reason)
				}
				if got := resultText(res); got != row.want {
					t.Errorf("%s answered %q, want %q (%s)", row.tool, got, row.want, row.reason)
				}
				if len(asked) != 1 || asked[0] != row.asked {
					t.Errorf("%s: the caller was asked %q, want [%q] (%s)", row.tool, asked, row.asked, row.reason)
				}
				if got := u.seen()[before:]; len(got) != 2 || got[0] != "" || got[1] != upstreamState {
					t.Errorf("%s: the upstream's calls carried states %q, want a first call and a retry with its own state", row.tool, got)
				}
			}
		})
	}
}

// mcpPost sends one JSON-RPC request on 2026-07-28 to env's endpoint and
// returns the decoded response message (from a JSON or an SSE body).
func mcpRoundPost(t *testing.T, ctx context.Context, env *gatewaytest.Env, tool string, params map[string]any) *jsonrpc.Response {
	t.Helper()
	return mcpRoundPostAs(t, ctx, env, nil, tool, params)
}

// mcpRoundPostAs is mcpRoundPost sending header too (credentials).
func mcpRoundPostAs(t *testing.T, ctx context.Context, env *gatewaytest.Env, header http.Header, tool string, params map[string]any) *jsonrpc.Response {
	t.Helper()
	_, r := mcpRoundExchange(t, ctx, env, header, tool, params)
	return r
}

// mcpRoundExchange is mcpRoundPostAs with the answer's HTTP status.
func mcpRoundExchange(t *testing.T, ctx context.Context, env *gatewaytest.Env, header http.Header, tool string, params map[string]any) (int, *jsonrpc.Response) {
	t.Helper()
	params["name"] = tool
	if _, ok := params["arguments"]; !ok {
		params["arguments"] = map[string]any{}
	}
	return mcpRequest2026(t, ctx, env.MCPURL, header, "tools/call", tool, params)
}

// mcpRequest2026 POSTs one 2026-07-28 request of method on name (its
// Mcp-Name) with params, whose _meta gets the revision and a client
// (clientCapabilities: as params has them, else elicitation), and returns
// the HTTP status and the response (from a JSON body or an event
// stream's first event).
func mcpRequest2026(t *testing.T, ctx context.Context, url string, header http.Header, method, name string, params map[string]any) (int, *jsonrpc.Response) {
	t.Helper()
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
	}
	meta[mcp.MetaKeyProtocolVersion] = "2026-07-28"
	meta[mcp.MetaKeyClientInfo] = map[string]any{"name": "raw", "version": "1"}
	params["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := httpClient(t, header).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(data, []byte("data: ")); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = data[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		t.Fatalf("decoding %q: %v", data, err)
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("got %T, want a response", msg)
	}
	return resp.StatusCode, r
}

// firstRound calls tool on 2026-07-28 and returns its input_required
// result's fields.
func firstRound(t *testing.T, ctx context.Context, env *gatewaytest.Env, tool string) (state string, requests json.RawMessage) {
	t.Helper()
	r := mcpRoundPost(t, ctx, env, tool, map[string]any{})
	if r.Error != nil {
		t.Fatalf("first round: %v", r.Error)
	}
	var res struct {
		ResultType    string          `json:"resultType"`
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  string          `json:"requestState"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ResultType != "input_required" || res.RequestState == "" || len(res.InputRequests) == 0 {
		t.Fatalf("first round answered %s, want input_required with requests and a state", r.Result)
	}
	if strings.Contains(string(r.Result), upstreamState) {
		t.Fatalf("the upstream's own state reached the caller: %s", r.Result)
	}
	return res.RequestState, res.InputRequests
}

// TestMCPInputRoundStateRefused: a retry whose requestState is not the one
// the gateway sealed for this caller and tool is refused with invalid
// params naming why, and never reaches the upstream; the untouched state
// continues the round.
func TestMCPInputRoundStateRefused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env, u := startInputEnv(t, ctx, nil)
	state, _ := firstRound(t, ctx, env, "up.confirm")
	answer := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Eve"}}}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		t.Fatalf("the sealed state is not URL-safe base64: %v", err)
	}
	raw[len(raw)-1] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)
	for _, row := range []struct {
		name, reason, tool string
		params             map[string]any
		want               string
	}{
		{"tampered", "one flipped bit of the sealed state: the tag does not verify", "up.confirm",
			map[string]any{"inputResponses": answer, "requestState": tampered}, "requestState is not one this gateway issued"},
		{"forged", "a state the caller made up (the upstream's own, say)", "up.confirm",
			map[string]any{"inputResponses": answer, "requestState": upstreamState}, "requestState is not one this gateway issued"},
		{"other tool", "a state sealed for up.confirm presented to up.sample", "up.sample",
			map[string]any{"inputResponses": answer, "requestState": state}, "requestState was issued for another tool"},
		{"no state", "answers without the state of the round they answer", "up.confirm",
			map[string]any{"inputResponses": answer}, "inputResponses without the requestState"},
	} {
		t.Run(row.name, func(t *testing.T) {
			before := len(u.seen())
			r := mcpRoundPost(t, ctx, env, row.tool, row.params)
			var werr *jsonrpc.Error
			if !errors.As(r.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, row.want) {
				t.Fatalf("got %v / %s, want invalid params saying %q (%s)", r.Error, r.Result, row.want, row.reason)
			}
			if got := u.seen()[before:]; len(got) != 0 {
				t.Errorf("the refused retry reached the upstream: %q", got)
			}
		})
	}
	r := mcpRoundPost(t, ctx, env, "up.confirm", map[string]any{"inputResponses": answer, "requestState": state})
	if r.Error != nil || !strings.Contains(string(r.Result), "hello Eve") {
		t.Fatalf("the untouched state: %v %s, want the upstream's answer", r.Error, r.Result)
	}
}

// TestMCPInputRoundRefusals: a caller that did not declare the capability
// an upstream asks for gets 2026-07-28's missing-capability error naming
// it; a policy that forbids an upstream to elicit refuses the round (an
// isError result with reason input-forbidden), while the upstream's other
// kind (sampling) still passes.
func TestMCPInputRoundRefusals(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	t.Run("no capability", func(t *testing.T) {
		env, u := startInputEnv(t, ctx, nil)
		var asked []string
		cs := inputClient(t, ctx, env, false, true, &asked)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.confirm", Arguments: map[string]any{}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(werr.Message, "elicitation") {
			t.Fatalf("got %v, want -32021 naming elicitation", err)
		}
		var data mcp.MissingRequiredClientCapabilityData
		if err := json.Unmarshal(werr.Data, &data); err != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Elicitation == nil {
			t.Errorf("error data %s does not name the elicitation capability (%v)", werr.Data, err)
		}
		if len(asked) != 0 || len(u.seen()) != 1 {
			t.Errorf("asked %q, upstream calls %q: want one first call and nothing asked", asked, u.seen())
		}
	})
	t.Run("policy forbids elicitation", func(t *testing.T) {
		env, u := startInputEnv(t, ctx, func(c *server.Config, url string) {
			c.Policy.MCPUpstreams.Input.Forbid = map[string][]string{url: {"elicitation"}}
		})
		var asked []string
		cs := inputClient(t, ctx, env, true, true, &asked)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.confirm", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "forbids") || res.Meta["flowdrop/reason"] != "input-forbidden" {
			t.Fatalf("got %v %+v, want an isError result with reason input-forbidden", err, res)
		}
		if len(asked) != 0 || len(u.seen()) != 1 {
			t.Errorf("asked %q, upstream calls %q: want one first call and nothing asked", asked, u.seen())
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.sample", Arguments: map[string]any{}})
		if err != nil || res.IsError || resultText(res) != "model said 42" {
			t.Fatalf("sampling, not forbidden: %v %+v", err, res)
		}
	})
	t.Run("state under a rotated-out key", func(t *testing.T) {
		dir := t.TempDir()
		key := func(name string, b byte) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		oldKey, newKey := key("old", 1), key("new", 2)
		var base server.PolicyConfig
		env, _ := startInputEnv(t, ctx, func(c *server.Config, _ string) {
			c.Policy.MCPUpstreams.Input.KeyFiles = []string{oldKey}
			base = c.Policy
		})
		state, _ := firstRound(t, ctx, env, "up.confirm")
		answer := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Bo"}}}
		// Rotation overlap: the new key seals, the old one still opens.
		next := base
		next.MCPUpstreams.Input = server.MCPInputConfig{KeyFiles: []string{newKey, oldKey}}
		if err := env.Gateway.ReloadPolicy(next); err != nil {
			t.Fatal(err)
		}
		if r := mcpRoundPost(t, ctx, env, "up.confirm", map[string]any{"inputResponses": answer, "requestState": state}); r.Error != nil || !strings.Contains(string(r.Result), "hello Bo") {
			t.Fatalf("a state sealed under the old key during the overlap: %v %s", r.Error, r.Result)
		}
		// The old key gone: its states are refused.
		next.MCPUpstreams.Input = server.MCPInputConfig{KeyFiles: []string{newKey}}
		if err := env.Gateway.ReloadPolicy(next); err != nil {
			t.Fatal(err)
		}
		r := mcpRoundPost(t, ctx, env, "up.confirm", map[string]any{"inputResponses": answer, "requestState": state})
		var werr *jsonrpc.Error
		if !errors.As(r.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "key it no longer holds") {
			t.Fatalf("a state under a removed key: %v %s, want invalid params", r.Error, r.Result)
		}
	})
}

// TestMCPInputRoundsBoundedAndAudited: an upstream that asks again after
// every answer is refused at pipeline.InputMaxRounds rounds
// (input-too-large), having asked the caller one fewer times; a gRPC
// caller, which cannot answer, is refused FailedPrecondition
// (input-unsupported); every round's audit line says it was a round, its
// number and the kinds asked, and neither the question nor the answer
// appears anywhere in the audit file.
func TestMCPInputRoundsBoundedAndAudited(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	env, u := startInputEnv(t, ctx, func(c *server.Config, _ string) { c.Policy.Audit = server.AuditConfig{Path: audit} })
	var asked []string
	cs := inputClient(t, ctx, env, true, false, &asked)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.nag", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta["flowdrop/reason"] != "input-too-large" {
		t.Fatalf("got %v %+v, want an isError result with reason input-too-large", err, res)
	}
	if len(asked) != pipeline.InputMaxRounds-1 || len(u.seen()) != pipeline.InputMaxRounds {
		t.Errorf("the caller was asked %d times and the upstream called %d times, want %d and %d",
			len(asked), len(u.seen()), pipeline.InputMaxRounds-1, pipeline.InputMaxRounds)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.confirm", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "hello Ada" {
		t.Fatalf("up.confirm: %v %+v", err, res)
	}
	_, err = env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "up.confirm", Arguments: &structpb.Struct{}})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "2026-07-28") {
		t.Errorf("gRPC caller: %v, want FailedPrecondition saying only a 2026-07-28 MCP caller can answer", err)
	}

	lines, raw := auditLines(t, env, audit)
	for _, secret := range []string{"Ada", "Your name?", "Again?", upstreamState} {
		if strings.Contains(raw, secret) {
			t.Errorf("the audit file holds %q: a round's content must not be logged", secret)
		}
	}
	var confirm []map[string]any
	for _, l := range lines {
		if l["tool"] == "up.confirm" && l["operation"] == nil {
			confirm = append(confirm, l)
		}
	}
	// The MCP rounds (first, retry) and the gRPC call.
	if len(confirm) != 3 {
		t.Fatalf("%d audit lines for up.confirm, want 3: %v", len(confirm), confirm)
	}
	first, retry, grpcCall := confirm[0], confirm[1], confirm[2]
	if first["input_round"] != float64(1) || fmt.Sprint(first["input_asked"]) != "[elicitation]" || first["decision"] != "allow" {
		t.Errorf("first round's line: %v, want input_round 1, input_asked [elicitation], allowed", first)
	}
	if retry["input_round"] != float64(2) || retry["input_answered"] != float64(1) || retry["input_asked"] != nil {
		t.Errorf("retry's line: %v, want input_round 2, input_answered 1, nothing asked", retry)
	}
	if grpcCall["decision"] != "error" || grpcCall["reason"] != "FailedPrecondition" || grpcCall["input_round"] != nil {
		t.Errorf("gRPC call's line: %v, want an error (FailedPrecondition) and no round", grpcCall)
	}
}

// TestMCPInputRoundOtherCaller: with authentication on, a round's sealed
// state issued to one caller is refused for another (invalid params,
// "issued to another caller") and never reaches the upstream; its own
// caller continues the round with it.
func TestMCPInputRoundOtherCaller(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	u := &inputUpstream{}
	url := u.serve(t)
	schema, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: "up.confirm", InputSchema: schema, Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "confirm"}}}
		}),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
				{Name: "alice", SHA256: policy.HashAPIKey("alice-key"), Roles: []string{policy.RoleInvoker}},
				{Name: "bob", SHA256: policy.HashAPIKey("bob-key"), Roles: []string{policy.RoleInvoker}},
			}}
		}))
	as := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
	r := mcpRoundPostAs(t, ctx, env, as("alice-key"), "up.confirm", map[string]any{})
	var first struct {
		RequestState string `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &first) != nil || first.RequestState == "" {
		t.Fatalf("alice's first round: %v %s", r.Error, r.Result)
	}
	answer := map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Mallory"}}}
	before := len(u.seen())
	r = mcpRoundPostAs(t, ctx, env, as("bob-key"), "up.confirm", map[string]any{"inputResponses": answer, "requestState": first.RequestState})
	var werr *jsonrpc.Error
	if !errors.As(r.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "issued to another caller") {
		t.Fatalf("bob with alice's state: %v %s, want invalid params", r.Error, r.Result)
	}
	if got := u.seen()[before:]; len(got) != 0 {
		t.Errorf("bob's retry reached the upstream: %q", got)
	}
	answer["name"].(map[string]any)["content"] = map[string]any{"name": "Alice"}
	r = mcpRoundPostAs(t, ctx, env, as("alice-key"), "up.confirm", map[string]any{"inputResponses": answer, "requestState": first.RequestState})
	if r.Error != nil || !strings.Contains(string(r.Result), "hello Alice") {
		t.Fatalf("alice continuing her round: %v %s", r.Error, r.Result)
	}
}
