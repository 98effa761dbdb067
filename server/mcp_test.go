package server_test

// MCP endpoint tests: the go-sdk's own MCP client against a real gateway
// serving MCP over HTTP on 127.0.0.1 (gatewaytest.WithMCP), with the real
// example tool service behind it.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"
)

// headerTransport adds fixed headers (credentials) to every request. It
// has its own connection pool, closed at cleanup: a connection left open
// would hold up the server's graceful shutdown.
type headerTransport struct {
	h    http.Header
	base *http.Transport
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

func (t headerTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// httpClient returns a client sending header, its connections closed at cleanup.
func httpClient(t testing.TB, header http.Header) *http.Client {
	hc := &http.Client{Transport: headerTransport{header, http.DefaultTransport.(*http.Transport).Clone()}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

type mcpClientOpts struct {
	header   http.Header
	version  string // protocol version; "" = the SDK's latest
	onChange func()
	client   *mcp.ClientOptions // the client's options (nil: none beyond onChange)
}

// mcpConnect connects the SDK's client to env's MCP endpoint.
func mcpConnect(t testing.TB, ctx context.Context, url string, o mcpClientOpts) (*mcp.ClientSession, error) {
	t.Helper()
	copts := &mcp.ClientOptions{}
	if o.client != nil {
		copts = o.client
	}
	if o.onChange != nil {
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { o.onChange() }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, copts)
	hc := httpClient(t, o.header)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: o.version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

func mustConnect(t testing.TB, ctx context.Context, url string, o mcpClientOpts) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t, ctx, url, o)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	return cs
}

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPListsTheRegistry(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	if si, want := cs.InitializeResult().ServerInfo, buildinfo.Read().ImplementationVersion(); si == nil || si.Name != "flowdrop-gateway" || si.Version != want {
		t.Errorf("serverInfo %+v, want flowdrop-gateway at the build's version %q", si, want)
	}

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	entries := env.Registry.Snapshot().List()
	if len(got) != len(entries) {
		t.Fatalf("tools/list returned %d tools, the registry has %d", len(got), len(entries))
	}
	for _, e := range entries {
		tool, ok := got[e.Tool.Name]
		if !ok {
			t.Errorf("tool %q missing from tools/list", e.Tool.Name)
			continue
		}
		if tool.Description != e.Tool.Description {
			t.Errorf("%s: description %q, want %q", e.Tool.Name, tool.Description, e.Tool.Description)
		}
		// The advertised schema is the registered one, as JSON.
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema map[string]any
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(e.Tool.InputSchema.AsMap(), schema); diff != "" {
			t.Errorf("%s: inputSchema differs from the registered schema (-registered +listed):\n%s", e.Tool.Name, diff)
		}
	}
}

func TestMCPCallRepairsStringifiedArray(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "create_note",
		Arguments: json.RawMessage(demoCallArgs), // title escaped twice, tags as a JSON string
		Meta:      mcp.Meta{mcpapi.MCPMetaCallID: "call-7"},
	})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if res.IsError {
		t.Fatalf("isError result: %s", resultText(res))
	}

	// What reached the backend: the repaired arguments, the call id, the caller.
	calls := env.Backend.CallsFor("create_note")
	if len(calls) != 1 {
		t.Fatalf("backend got %d calls, want 1", len(calls))
	}
	want := gatewaytest.Args(t, map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}})
	if diff := cmp.Diff(want.AsMap(), calls[0].Request.GetArguments().AsMap()); diff != "" {
		t.Errorf("backend arguments (-want +got):\n%s", diff)
	}
	if id := calls[0].Request.GetCallId(); id != "call-7" {
		t.Errorf("backend call_id = %q, want call-7 (from _meta %s)", id, mcpapi.MCPMetaCallID)
	}

	// The repairs, for the model, in _meta.
	wantRepairs := []any{
		map[string]any{"path": "/tags", "kind": "json-decoded"},
		map[string]any{"path": "/title", "kind": "entities-decoded", "passes": float64(2)},
	}
	gotRepairs, _ := res.Meta[mcpapi.MCPMetaRepairs].([]any)
	sortByPath := func(a, b any) int {
		return strings.Compare(a.(map[string]any)["path"].(string), b.(map[string]any)["path"].(string))
	}
	slices.SortFunc(gotRepairs, sortByPath)
	if diff := cmp.Diff(wantRepairs, gotRepairs); diff != "" {
		t.Errorf("_meta %s (-want +got):\n%s", mcpapi.MCPMetaRepairs, diff)
	}

	// The result: the echo object as structuredContent and as JSON text.
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent = %T, want an object", res.StructuredContent)
	}
	if diff := cmp.Diff(want.AsMap(), sc["arguments"]); diff != "" {
		t.Errorf("structuredContent.arguments (-want +got):\n%s", diff)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(resultText(res)), &fromText); err != nil {
		t.Fatalf("text content is not the result's JSON: %v", err)
	}
	if diff := cmp.Diff(sc, fromText); diff != "" {
		t.Errorf("text content and structuredContent differ:\n%s", diff)
	}
	if !strings.Contains(resultText(res), "Ember & Oak") {
		t.Errorf("text content escapes HTML: %s", resultText(res))
	}
}

func TestMCPCallOutcomes(t *testing.T) {
	t.Parallel()
	closed := gatewaytest.ClosedAddr(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("down_tool")(closed) }))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	tests := []struct {
		name, reason string
		tool         string
		args         string
		// Exactly one of: a JSON-RPC error code, or an isError result.
		rpcCode     int64
		isError     bool
		textHas     []string // substrings of the message (error or result text)
		textHasNot  []string
		metaReason  string
		backendHits int
	}{
		{
			name: "validation failure", reason: "a schema violation is something the model can fix: an isError result naming the field",
			tool: "create_note", args: `{"title":""}`,
			isError: true, textHas: []string{`invalid arguments for tool "create_note"`, "/title"}, metaReason: "arguments-invalid",
		},
		{
			name: "validation failure after a repair", reason: "the model learns what the gateway repaired before the check failed",
			tool: "create_note", args: `{"title":"x","tags":"[1,2]"}`,
			isError: true, textHas: []string{"/tags/0", "repaired", "/tags (decoded a JSON string"}, metaReason: "arguments-invalid",
		},
		{
			name: "unknown tool", reason: "a tool that does not exist is a protocol error (MCP spec), not a result",
			tool: "no_such_tool", args: `{}`,
			rpcCode: jsonrpc.CodeInvalidParams, textHas: []string{`unknown tool "no_such_tool"`},
		},
		{
			name: "arguments not an object", reason: "malformed params are a protocol error before the pipeline",
			tool: "create_note", args: `["x"]`,
			rpcCode: jsonrpc.CodeInvalidParams, textHas: []string{"must be a JSON object"},
		},
		{
			name: "number float64 cannot hold", reason: "a value is refused, naming its path (not the number: the field may be sensitive), rather than changed before the tool sees it",
			tool: "update_settings", args: `{"settings":{"n":12345678901234567891}}`,
			rpcCode: jsonrpc.CodeInvalidParams, textHas: []string{"/settings/n", "cannot be represented exactly"},
		},
		{
			name: "tool-level failure", reason: "the backend's is_error result is the tool speaking to the model: isError with its text",
			tool: "run_command", args: `{"command":"false"}`,
			isError: true, textHas: []string{"command exited with status 1"}, backendHits: 1,
		},
		{
			name: "backend unavailable", reason: "an API failure is a tool execution error (MCP spec); the backend's address is not leaked",
			tool: "down_tool", args: `{}`,
			isError: true, textHas: []string{`tool "down_tool" is unavailable`}, textHasNot: []string{closed}, metaReason: "backend-unavailable",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor(tc.tool))
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			var text string
			if tc.rpcCode != 0 {
				var werr *jsonrpc.Error
				if !errors.As(err, &werr) {
					t.Fatalf("got result %+v, err %v; want JSON-RPC error %d (%s)", res, err, tc.rpcCode, tc.reason)
				}
				if werr.Code != tc.rpcCode {
					t.Errorf("JSON-RPC code %d, want %d (%s)", werr.Code, tc.rpcCode, tc.reason)
				}
				text = werr.Message
			} else {
				if err != nil {
					t.Fatalf("tools/call: %v (%s)", err, tc.reason)
				}
				if res.IsError != tc.isError {
					t.Errorf("isError = %v, want %v (%s)", res.IsError, tc.isError, tc.reason)
				}
				text = resultText(res)
				if tc.metaReason != "" && res.Meta[mcpapi.MCPMetaReason] != tc.metaReason {
					t.Errorf("_meta %s = %v, want %q", mcpapi.MCPMetaReason, res.Meta[mcpapi.MCPMetaReason], tc.metaReason)
				}
			}
			for _, s := range tc.textHas {
				if !strings.Contains(text, s) {
					t.Errorf("message %q lacks %q (%s)", text, s, tc.reason)
				}
			}
			for _, s := range tc.textHasNot {
				if strings.Contains(text, s) {
					t.Errorf("message %q contains %q (%s)", text, s, tc.reason)
				}
			}
			if n := len(env.Backend.CallsFor(tc.tool)) - before; n != tc.backendHits {
				t.Errorf("backend got %d calls, want %d (%s)", n, tc.backendHits, tc.reason)
			}
		})
	}
}

// mcpAuthEnv is a gateway with authentication on: "agent" may invoke
// create_* and update_*, but update_settings is denied; "operator" is an
// admin without the invoker role.
func mcpAuthEnv(t *testing.T) *gatewaytest.Env {
	return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
			{Name: "operator", SHA256: policy.HashAPIKey("operator-key"), Roles: []string{policy.RoleAdmin}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
			"agent": {Allow: []string{"create_*", "update_*"}, Deny: []string{"update_settings"}},
		}}
	}))
}

func TestMCPAuthorizationFiltersAndRefuses(t *testing.T) {
	env := mcpAuthEnv(t)
	ctx := testCtx(t)
	bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

	t.Run("listed", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason string
			header       http.Header
			want         []string
		}{
			{"bearer", "a bearer API key over HTTP is the same identity as on gRPC", bearer("agent-key"), []string{"create_note"}},
			{"x-api-key", "the X-API-Key header works as on gRPC", http.Header{"X-Api-Key": {"agent-key"}}, []string{"create_note"}},
			{"no invoker role", "a caller that may not invoke tools is offered none", bearer("operator-key"), nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: tc.header})
				if diff := cmp.Diff(tc.want, toolNames(t, ctx, cs)); diff != "" {
					t.Errorf("tools/list (-want +got) (%s):\n%s", tc.reason, diff)
				}
			})
		}
	})

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearer("agent-key")})
	for _, tc := range []struct {
		name, reason, tool string
		wantCode           int64
		wantMsg            string
	}{
		{"not in allow list", "an existing tool the caller is not offered cannot be called", "run_command",
			jsonrpc.CodeInvalidParams, `tool "run_command" is not in the allow list of caller "agent"`},
		{"denied", "deny wins over allow", "update_settings",
			jsonrpc.CodeInvalidParams, `tool "update_settings" is denied for caller "agent"`},
		{"nonexistent, not allowed", "the answer for a tool that does not exist is the same: existence is not revealed", "delete_everything",
			jsonrpc.CodeInvalidParams, `tool "delete_everything" is not in the allow list of caller "agent"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"command": "ls", "settings": map[string]any{}}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) {
				t.Fatalf("err = %v, want a JSON-RPC error (%s)", err, tc.reason)
			}
			if werr.Code != tc.wantCode || werr.Message != tc.wantMsg {
				t.Errorf("error %d %q, want %d %q (%s)", werr.Code, werr.Message, tc.wantCode, tc.wantMsg, tc.reason)
			}
			if n := len(env.Backend.CallsFor(tc.tool)); n != 0 {
				t.Errorf("backend got %d calls (%s)", n, tc.reason)
			}
		})
	}

	t.Run("allowed call carries the caller", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "t"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call: %v %+v", err, res)
		}
		calls := env.Backend.CallsFor("create_note")
		if len(calls) != 1 || calls[0].Request.GetCaller().GetSubject() != "agent" || calls[0].Request.GetCaller().GetMethod() != policy.MethodAPIKey {
			t.Errorf("backend calls %v, want one from caller agent (api-key)", calls)
		}
	})

	t.Run("unauthenticated HTTP", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason  string
			header        http.Header
			wantChallenge string
		}{
			{"no credentials", "401 before MCP, with a Bearer challenge", nil, `Bearer realm="flowdrop"`},
			{"wrong key", "an unknown key is an invalid token (RFC 6750)", bearer("nope"), `Bearer realm="flowdrop", error="invalid_token"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.MCPURL, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = tc.header.Clone()
				if req.Header == nil {
					req.Header = http.Header{}
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := httpClient(t, nil).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("status %d, want 401 (%s)", resp.StatusCode, tc.reason)
				}
				want := []string{tc.wantChallenge, `ApiKey realm="flowdrop", header="X-API-Key"`}
				if got := resp.Header.Values("WWW-Authenticate"); !slices.Equal(got, want) {
					t.Errorf("WWW-Authenticate %q, want %q: the Bearer challenge and the API key header (%s)", got, want, tc.reason)
				}
				if !strings.Contains(string(raw), "accepted credentials: an API key in X-API-Key or Authorization: Bearer") {
					t.Errorf("body %q does not name the accepted credentials (%s)", raw, tc.reason)
				}
			})
		}
		// And the SDK client fails to connect.
		if _, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{}); err == nil {
			t.Error("MCP client connected without credentials")
		}
	})
}

// TestMCPAuthFailureIsAudited: a tools/call refused by authentication
// writes one audit line, as a refused gRPC InvokeTool does — deny, the
// authentication reason, no caller, the tool and call id when the body
// says them — and never the credential. Requests that are not tool calls
// are refused without an audit line (as on gRPC).
func TestMCPAuthFailureIsAudited(t *testing.T) {
	t.Parallel()
	const wrongKey = "fd_wrong_mcp_key_93b1e7"
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		}}
		c.Policy.Audit = server.AuditConfig{Path: path}
	}))
	ctx := testCtx(t)
	// A tools/call whose arguments outgrow the server's peek: the tool
	// name cannot be read, but the line is still written.
	big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_note","_meta":{"flowdrop/call_id":"c-big"},"arguments":{"title":"` +
		strings.Repeat("x", 100<<10) + `"}}}`
	// want collects the audit line each subtest that ran expects, so every
	// subtest also passes on its own.
	var want []map[string]any
	for _, tc := range []struct {
		name, reason string
		header       http.Header
		body         string
		line         map[string]any // the audit line it writes; nil: none
	}{
		{"wrong key", "an unknown API key on a tools/call is audited with the tool and call id",
			http.Header{"X-Api-Key": {wrongKey}},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t"},"_meta":{"flowdrop/call_id":"c-wrong"}}}`,
			map[string]any{"decision": "deny", "reason": policy.ReasonAPIKeyUnknown, "caller_subject": "", "tool": "create_note", "call_id": "c-wrong"}},
		{"not a tool call", "tools/list is not a tool call: refused, not audited",
			http.Header{"Authorization": {"Bearer " + wrongKey}},
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, nil},
		{"oversized", "a body past the peek bound is still recognised as a tools/call",
			http.Header{"Authorization": {"Bearer " + wrongKey}}, big,
			map[string]any{"decision": "deny", "reason": policy.ReasonAPIKeyUnknown, "caller_subject": "", "tool": "", "call_id": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.line != nil {
				want = append(want, tc.line)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.MCPURL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header.Clone()
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := httpClient(t, nil).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401 (%s)", resp.StatusCode, tc.reason)
			}
			if strings.Contains(string(body), wrongKey) {
				t.Errorf("the 401 body echoes the key: %q", body)
			}
		})
	}

	// auditLines closes the gateway (MCP first), which flushes the audit sink.
	lines, raw := auditLines(t, env, path)
	if strings.Contains(raw, wrongKey) || strings.Contains(raw, "Bearer") {
		t.Errorf("the audit log contains the credential:\n%s", raw)
	}
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d (one per refused tools/call):\n%s", len(lines), len(want), raw)
	}
	for i, w := range want {
		for k, v := range w {
			if got := lines[i][k]; got != v {
				t.Errorf("line %d: %s = %#v, want %#v\n%s", i, k, got, v, raw)
			}
		}
	}
}

// TestMCPListChanged: clients on MCP 2026-07-28 learn of registry changes on
// their subscriptions/listen stream, which a stateless server serves (it is
// a POST like any other). Older clients have no stream to receive it on
// from a stateless server; they see the change on their next tools/list.
func TestMCPListChanged(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithBackendHandler("fresh_tool",
		func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("fresh")}, nil
		}))
	ctx := testCtx(t)
	changed := make(chan struct{}, 16)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{onChange: func() { changed <- struct{}{} }})
	legacy := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{version: "2025-11-25"})

	waitChange := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/tools/list_changed after %s", what)
		}
	}
	schema := &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
	if _, err := env.Registry.Register(ctx, registry.Tool{Name: "fresh_tool", Description: "new", Backend: env.BackendAddr, InputSchema: schema}, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChange("registering fresh_tool")
	for _, s := range []*mcp.ClientSession{cs, legacy} {
		if names := toolNames(t, ctx, s); !slices.Contains(names, "fresh_tool") {
			t.Errorf("tools/list after registration = %v, lacks fresh_tool", names)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fresh_tool", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "fresh" || res.StructuredContent != nil {
		t.Fatalf("calling the new tool: %v %+v, want the string result as text only", err, res)
	}

	if err := env.Registry.Delete(ctx, "fresh_tool", nil); err != nil {
		t.Fatal(err)
	}
	waitChange("deleting fresh_tool")
	if names := toolNames(t, ctx, cs); slices.Contains(names, "fresh_tool") {
		t.Errorf("tools/list after deletion = %v, still has fresh_tool", names)
	}

	// Shutdown ends the listen stream instead of waiting for it: with the
	// stream still open, it returns before its deadline.
	sctx, cancel := context.WithTimeout(ctx, 5e9)
	defer cancel()
	if err := env.Gateway.Close(sctx); err != nil {
		t.Errorf("shutdown with a subscriptions/listen stream open: %v", err)
	}
}

// TestMCPPolicyRefusalsAreResults: refusals the model can act on — an
// argument rule (change the arguments) or a rate limit (wait) — are isError
// results with the policy's message, and the rule judges the normalized
// arguments.
func TestMCPPolicyRefusalsAreResults(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Rules = []policy.Rule{{Name: "no-chaining", Tools: []string{"run_command"},
			Expr: `!args.command.contains("&&")`, Message: "command chaining is not allowed"}}
		c.Policy.RateLimit = policy.RateLimitConfig{Rate: 0.001, Burst: 1} // one call per tool, then wait
	}))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	for _, tc := range []struct {
		name, reason, tool, args string
		// first is a refused call made before, so the subtest holds alone.
		first      string
		wantReason string
		textHas    []string
	}{
		{"rule on normalized arguments", "&amp;&amp; is decoded before the rule runs, so it cannot slip past it",
			"run_command", `{"command":"ls &amp;&amp; rm -rf /"}`, "",
			policy.ReasonRuleDenied, []string{"command chaining is not allowed", "/command (decoded HTML entities)"}},
		{"rate limited", "the second call in the window waits: the model is told when to retry",
			"run_command", `{"command":"ls"}`, `{"command":"a &amp;&amp; b"}`,
			policy.ReasonRateLimited, []string{"retry after"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.first != "" {
				// Takes the one token (and is refused by the rule) or is
				// already rate-limited: either way the backend is not called.
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.first)}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatalf("tools/call: %v, want an isError result (%s)", err, tc.reason)
			}
			if !res.IsError || res.Meta[mcpapi.MCPMetaReason] != tc.wantReason {
				t.Errorf("isError=%v reason=%v, want true %q (%s)", res.IsError, res.Meta[mcpapi.MCPMetaReason], tc.wantReason, tc.reason)
			}
			for _, s := range tc.textHas {
				if !strings.Contains(resultText(res), s) {
					t.Errorf("text %q lacks %q (%s)", resultText(res), s, tc.reason)
				}
			}
		})
	}
	if n := len(env.Backend.CallsFor("run_command")); n != 0 {
		t.Errorf("backend got %d calls, want 0", n)
	}
}

// TestMCPRunServesAndShutsDown: Start with MCP.ListenAddr serves MCP next
// to gRPC, reports the URL, and closes gracefully with a client's
// subscriptions/listen stream still open.
func TestMCPRunServesAndShutsDown(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.ListenAddr, cfg.MCP.ListenAddr, cfg.Policy.Admin.ListenAddr = "127.0.0.1:0", "127.0.0.1:0", ""
	cfg.Store.Kind = server.StoreMemory
	cfg.ShutdownGrace = 5 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Tools = demoTools(t)
	g, err := server.Start(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := g.MCPURL()
	if !strings.HasSuffix(url, server.MCPPath) {
		t.Fatalf("MCPURL() = %q, want the endpoint's URL", url)
	}

	tctx := testCtx(t)
	changed := make(chan struct{}, 4)
	cs := mustConnect(t, tctx, url, mcpClientOpts{onChange: func() { changed <- struct{}{} }}) // opens a listen stream
	if names := toolNames(t, tctx, cs); !slices.Contains(names, "create_note") {
		t.Fatalf("tools/list = %v, want the demo tools", names)
	}
	res, err := cs.CallTool(tctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(demoCallArgs)})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}

	closed := make(chan error, 1)
	go func() { closed <- g.Close(tctx) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-tctx.Done():
		t.Fatal("Close did not return: the listen stream held up shutdown")
	}
}

// demoCallArgs are the banner's example arguments: a title escaped twice
// and tags as a JSON string.
const demoCallArgs = `{"title":"Ember &amp;amp; Oak","tags":"[\"a\",\"b\"]"}`

// TestMCPCancellationReachesTheBackend: an agent that gives up on a call
// (its HTTP request ends) cancels the backend call, as on gRPC.
func TestMCPCancellationReachesTheBackend(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}), make(chan struct{})
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		gatewaytest.WithTool(gatewaytest.ObjectTool("slow_tool")),
		gatewaytest.WithBackendHandler("slow_tool", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			close(started)
			<-ctx.Done() // only cancellation ends this call (the tool's budget is the 30s default)
			close(cancelled)
			return nil, ctx.Err()
		}))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})

	callCtx, cancelCall := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "slow_tool", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the call never reached the backend")
	}
	cancelCall()
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the backend call was not cancelled when the agent gave up")
	}
	if err := <-errc; err == nil {
		t.Error("CallTool returned no error after cancellation")
	}
}
