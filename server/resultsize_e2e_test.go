package server_test

import (
	"context"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestResultOverMaxResultBytesIsAToolError: a result over the tool's
// max_result_bytes (or the 1 MiB default) reaches the caller as a tool
// error naming the limit — on gRPC is_error, on MCP isError — never as a
// transport error; a result within it passes unchanged.
func TestResultOverMaxResultBytesIsAToolError(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	answer := func(n int) func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(strings.Repeat("r", n))}, nil
		}
	}
	bounded := func(name string, limit int64) gatewaytest.Option {
		return gatewaytest.WithTool(func(backend string) registry.Tool {
			tl := gatewaytest.ObjectTool(name)(backend)
			tl.MaxResultBytes = limit
			return tl
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		bounded("small_limit", 64), bounded("small_ok", 4096), bounded("default_limit", 0),
		gatewaytest.WithBackendHandler("small_limit", answer(200)),
		gatewaytest.WithBackendHandler("small_ok", answer(200)),
		gatewaytest.WithBackendHandler("default_limit", answer(3<<20/2)))
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	for _, tc := range []struct {
		tool, reason string
		over         bool
		limit        string
	}{
		{"small_limit", "200 bytes over a 64-byte limit", true, "64"},
		{"small_ok", "200 bytes within 4096", false, ""},
		{"default_limit", "1.5 MiB over the 1 MiB default", true, "1048576"},
	} {
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: &structpb.Struct{}})
		if err != nil {
			t.Fatalf("%s: %v; want an answer, not a transport error (%s)", tc.tool, err, tc.reason)
		}
		text := resp.GetResult().GetStringValue()
		if resp.GetIsError() != tc.over || (tc.over && (!strings.Contains(text, "max_result_bytes") || !strings.Contains(text, tc.limit))) {
			t.Errorf("%s over gRPC: is_error=%v %.120q; want is_error=%v naming the limit %s (%s)", tc.tool, resp.GetIsError(), text, tc.over, tc.limit, tc.reason)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
		if err != nil || res.IsError != tc.over || (tc.over && !strings.Contains(resultText(res), "max_result_bytes")) {
			t.Errorf("%s over MCP: %v %v; want isError=%v naming the limit (%s)", tc.tool, res, err, tc.over, tc.reason)
		}
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	got, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "small_limit"})
	if err != nil || got.GetTool().GetMaxResultBytes() != 64 {
		t.Errorf("GetTool max_result_bytes = %v %v; want 64", got.GetTool().GetMaxResultBytes(), err)
	}
}
