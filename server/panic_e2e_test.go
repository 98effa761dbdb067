package server_test

import (
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPanicInACallIsInternalOnBothFaces: a panic inside the pipeline (here
// from the stage hook, for the tool "boom" only) is that call's Internal
// error on gRPC and on MCP — "internal error", nothing of the panic — and
// the gateway keeps serving the next call on the same connection.
func TestPanicInACallIsInternalOnBothFaces(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithLogOutput(&logs),
		gatewaytest.WithTool(gatewaytest.ObjectTool("boom")),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.StageHook = func(stage string, c *pipeline.Call) {
				if c.Tool == "boom" && stage == "validate" {
					panic("secret internal state 0xdeadbeef")
				}
			}
		}))
	ctx := testCtx(t)

	_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "boom", Arguments: gatewaytest.Args(t, map[string]any{})})
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "deadbeef") {
		t.Errorf("gRPC call that panics = %v; want Internal without the panic's text", err)
	}
	if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "hi"})}); err != nil {
		t.Errorf("gRPC call after the panic: %v", err)
	}

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "boom", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "deadbeef") {
		t.Errorf("MCP call that panics: %v; want a JSON-RPC internal error without the panic's text", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "hi"}}); err != nil || res.IsError {
		t.Errorf("MCP call after the panic on the same session: %+v, %v", res, err)
	}
	if !strings.Contains(logs.String(), "deadbeef") {
		t.Error("the panic is not in the log")
	}
}
