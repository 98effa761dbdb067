package server_test

//lint:file-ignore SA1019 sampling is deprecated by SEP-2577 (2026-07-28) yet still needed by upstreams during the deprecation window; the gateway relays it

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
)

// capabilityUpstream is a stateless go-sdk v1.8.0 server whose tools
// refuse a request whose _meta does not declare the client capability they
// need with MCP 2026-07-28's -32021 (SEP-2575), as the conformance suite's
// test_missing_capability does: "needs-sampling" needs sampling,
// "needs-extension" an extension the gateway does not relay.
func capabilityUpstream(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "needs", Version: "1"}, nil)
	refuse := func(caps *mcp.ClientCapabilities) error {
		data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: caps})
		if err != nil {
			return err
		}
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "upstream-secret-wording", Data: data}
	}
	srv.AddTool(&mcp.Tool{Name: "needs-sampling", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if c := req.ClientCapabilities(); c == nil || c.Sampling == nil {
				return nil, refuse(&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "told sampling"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "needs-extension", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			caps := &mcp.ClientCapabilities{}
			caps.AddExtension("com.example/unrelayed", map[string]any{})
			return nil, refuse(caps)
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() {
		up.CloseClientConnections()
		up.Close()
	})
	return up.URL
}

// capabilityPost posts a 2026-07-28 tools/call of tool declaring caps and
// returns the HTTP status and the JSON-RPC response.
func capabilityPost(t *testing.T, ctx context.Context, env *gatewaytest.Env, tool string, caps map[string]any) (int, *jsonrpc.Response) {
	t.Helper()
	return mcpRoundExchange(t, ctx, env, nil, tool, map[string]any{"_meta": map[string]any{mcp.MetaKeyClientCapabilities: caps}})
}

// TestMCPUpstreamMissingCapability: an upstream tool's -32021 (it needs a
// client capability the call's _meta did not declare) reaches a 2026-07-28
// caller that did not declare it as the gateway's own -32021 naming it,
// with HTTP 400 (SEP-2575); a caller that declared it is declared to the
// upstream and served; a capability the policy withholds from the upstream
// is input-forbidden, one the gateway does not relay a tool error, and a
// gRPC caller's refusal says what would help. The upstream's wording is
// never passed on.
func TestMCPUpstreamMissingCapability(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	url := capabilityUpstream(t)
	start := func(t *testing.T, forbid []string) *gatewaytest.Env {
		env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
			if forbid != nil {
				c.Policy.MCPUpstreams.Input.Forbid = map[string][]string{url: forbid}
			}
		}))
		for _, name := range []string{"needs-sampling", "needs-extension"} {
			tool := &gatewayv1.Tool{Name: "up." + name, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
				Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: url, Tool: name}}}}
			if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
				t.Fatalf("register %s: %v", name, err)
			}
		}
		return env
	}
	env := start(t, nil)
	forbidding := start(t, []string{"sampling"})
	for _, row := range []struct {
		reason string
		env    *gatewaytest.Env
		tool   string
		caps   map[string]any
		// wantStatus and wantCode for a JSON-RPC error; else wantText in a
		// result (isError when wantReason is set).
		wantStatus int
		wantCode   int64
		wantText   string
		wantReason string
	}{
		{reason: "a caller without sampling gets -32021 naming sampling with HTTP 400",
			env: env, tool: "up.needs-sampling", caps: map[string]any{},
			wantStatus: http.StatusBadRequest, wantCode: mcp.CodeMissingRequiredClientCapabilities},
		{reason: "a caller declaring only elicitation gets the same",
			env: env, tool: "up.needs-sampling", caps: map[string]any{"elicitation": map[string]any{}},
			wantStatus: http.StatusBadRequest, wantCode: mcp.CodeMissingRequiredClientCapabilities},
		{reason: "a caller declaring sampling is declared to the upstream and served",
			env: env, tool: "up.needs-sampling", caps: map[string]any{"sampling": map[string]any{}},
			wantStatus: http.StatusOK, wantText: "told sampling"},
		{reason: "sampling the policy forbids for the upstream is input-forbidden, not the caller's to fix",
			env: forbidding, tool: "up.needs-sampling", caps: map[string]any{"sampling": map[string]any{}},
			wantStatus: http.StatusOK, wantText: "forbids", wantReason: "input-forbidden"},
		{reason: "a capability the gateway does not relay is a tool error no declaration helps",
			env: env, tool: "up.needs-extension", caps: map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}},
			wantStatus: http.StatusOK, wantText: "does not relay", wantReason: "input-unsupported"},
	} {
		t.Run(row.reason, func(t *testing.T) {
			code, r := capabilityPost(t, ctx, row.env, row.tool, row.caps)
			if code != row.wantStatus {
				t.Errorf("HTTP %d, want %d", code, row.wantStatus)
			}
			if row.wantCode != 0 {
				var werr *jsonrpc.Error
				if r.Error == nil || !errors.As(r.Error, &werr) || werr.Code != row.wantCode {
					t.Fatalf("got %v, want JSON-RPC error %d", r.Error, row.wantCode)
				}
				var data mcp.MissingRequiredClientCapabilityData
				if err := json.Unmarshal(werr.Data, &data); err != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Sampling == nil ||
					data.RequiredCapabilities.Elicitation != nil {
					t.Errorf("error data %s does not name sampling alone (%v)", werr.Data, err)
				}
				if strings.Contains(werr.Message, "upstream-secret-wording") || !strings.Contains(werr.Message, "sampling") {
					t.Errorf("message %q: want the gateway's own, naming sampling", werr.Message)
				}
				return
			}
			if r.Error != nil {
				t.Fatalf("got error %v, want a result", r.Error)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatal(err)
			}
			if res.IsError != (row.wantReason != "") || !strings.Contains(resultText(&res), row.wantText) || res.Meta["flowdrop/reason"] != nilIfEmpty(row.wantReason) {
				t.Errorf("got %s, want text containing %q, reason %q", r.Result, row.wantText, row.wantReason)
			}
			if strings.Contains(string(r.Result), "upstream-secret-wording") {
				t.Errorf("the upstream's wording reached the caller: %s", r.Result)
			}
		})
	}
	t.Run("a gRPC caller is told only an MCP caller on 2026-07-28 can give it", func(t *testing.T) {
		_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "up.needs-sampling", Arguments: &structpb.Struct{}})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "2026-07-28") {
			t.Fatalf("got %v, want FailedPrecondition naming the revision", err)
		}
	})
}

// nilIfEmpty is s as a _meta value: absent when empty.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
