package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPAccessLog: every MCP request, the go-sdk client's over loopback,
// gets a "finished call" line with the gRPC line's facts (method, tool,
// caller, outcome, code and reason, duration) at the gRPC face's level for
// the same outcome; a request refused at HTTP authentication gets one too.
func TestMCPAccessLog(t *testing.T) {
	t.Parallel()
	var buf accessLogBuffer
	closed := gatewaytest.ClosedAddr(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("down_tool")(closed) }),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Logger = jsonLogger(&buf, slog.LevelDebug)
			c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
				{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}}}}
			c.Policy.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
				"agent": {Allow: []string{"*"}, Deny: []string{"update_settings"}}}}
		}))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	calls := []struct{ id, tool, args string }{
		{"ok", "create_note", `{"title":"a","tags":"[\"x\"]"}`},
		{"invalid", "create_note", `{"title":""}`},
		{"down", "down_tool", `{}`},
		{"unknown", "no_such_tool", `{}`},
		{"denied", "update_settings", `{}`},
	}
	for _, c := range calls {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args), Meta: mcp.Meta{mcpapi.MCPMetaCallID: c.id}})
	}
	// Refused at HTTP authentication: no credentials.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.MCPURL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{},"_meta":{"flowdrop/call_id":"no-creds"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credentials: status %d, want 401", resp.StatusCode)
	}

	agent := map[string]any{"protocol": "mcp", "flowdrop.caller": "agent", "flowdrop.caller_method": "api-key"}
	with := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range agent {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name, reason string
		key, value   string
		want         map[string]any
		absent       []string
	}{
		{name: "server/discover", reason: "the handshake (2026-07-28: server/discover) is a request like any other: logged at the OK level",
			key: "mcp.method", value: "server/discover",
			want: with(map[string]any{"level": "INFO", "flowdrop.outcome": "ok", "flowdrop.code": "OK"})},
		{name: "tools/list", reason: "listing is logged, with the caller",
			key: "mcp.method", value: "tools/list",
			want: with(map[string]any{"level": "INFO", "flowdrop.outcome": "ok", "flowdrop.code": "OK"})},
		{name: "ok call", reason: "a served call: method, tool, call id, repairs, INFO (as gRPC's OK line)",
			key: "flowdrop.call_id", value: "ok",
			want: with(map[string]any{"level": "INFO", "mcp.method": "tools/call", "flowdrop.tool": "create_note", "flowdrop.outcome": "ok",
				"flowdrop.code": "OK", "flowdrop.repairs": float64(1)}),
			absent: []string{"flowdrop.reason", "mcp.error"}},
		{name: "tool-error: invalid", reason: "an isError result carries its reason; invalid arguments are INFO, as InvalidArgument on gRPC",
			key: "flowdrop.call_id", value: "invalid",
			want: with(map[string]any{"level": "INFO", "flowdrop.tool": "create_note", "flowdrop.outcome": "tool-error",
				"flowdrop.code": "InvalidArgument", "flowdrop.reason": "arguments-invalid"})},
		{name: "tool-error: backend down", reason: "an unavailable backend is WARN, as Unavailable on gRPC",
			key: "flowdrop.call_id", value: "down",
			want: with(map[string]any{"level": "WARN", "flowdrop.tool": "down_tool", "flowdrop.outcome": "tool-error",
				"flowdrop.code": "Unavailable", "flowdrop.reason": "backend-unavailable"})},
		{name: "JSON-RPC error: unknown tool", reason: "a JSON-RPC error names its code and message; NotFound is INFO",
			key: "flowdrop.call_id", value: "unknown",
			want: with(map[string]any{"level": "INFO", "flowdrop.tool": "no_such_tool", "flowdrop.outcome": "error",
				"flowdrop.code": "NotFound", "flowdrop.reason": "tool-not-found", "mcp.error.code": float64(-32602)})},
		{name: "JSON-RPC error: denied", reason: "a tool the caller may not call is WARN, as PermissionDenied on gRPC",
			key: "flowdrop.call_id", value: "denied",
			want: with(map[string]any{"level": "WARN", "flowdrop.tool": "update_settings", "flowdrop.outcome": "error",
				"flowdrop.code": "PermissionDenied", "flowdrop.reason": "tool-denied", "mcp.error.code": float64(-32602)})},
		{name: "401", reason: "a request refused at HTTP authentication is logged with what its body named, no caller",
			key: "flowdrop.call_id", value: "no-creds",
			want: map[string]any{"level": "INFO", "protocol": "mcp", "mcp.method": "tools/call", "flowdrop.tool": "create_note",
				"flowdrop.outcome": "error", "flowdrop.code": "Unauthenticated", "flowdrop.reason": "credentials-missing", "http.status": float64(401)},
			absent: []string{"flowdrop.caller"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := buf.line(t, tc.key, tc.value)
			if line == nil {
				return
			}
			for k, want := range tc.want {
				if line[k] != want {
					t.Errorf("%s = %v, want %v (%s); line %v", k, line[k], want, tc.reason, line)
				}
			}
			for _, k := range tc.absent {
				if _, ok := line[k]; ok {
					t.Errorf("line has %s (%s): %v", k, tc.reason, line)
				}
			}
			for _, k := range []string{"peer.address", "mcp.time_ms", "mcp.start_time"} {
				if line[k] == nil || line[k] == "" {
					t.Errorf("line lacks %s: %v", k, line)
				}
			}
		})
	}
}
