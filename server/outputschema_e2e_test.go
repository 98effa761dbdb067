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

// TestOutputSchema: a tool's output_schema is listed on MCP tools/list
// (outputSchema) and checked on every result: a result that fails it is a
// tool error naming the violation (on_invalid_output: error, the default)
// or forwarded (pass), counted in flowdrop_output_violations_total either
// way; a result that satisfies it passes unchanged.
func TestOutputSchema(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	answer := func(v map[string]any) func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			s, _ := structpb.NewStruct(v)
			return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(s)}, nil
		}
	}
	outSchema, _ := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"id"},
		"properties": map[string]any{"id": map[string]any{"type": "string"}}})
	tool := func(name, mode string) gatewaytest.Option {
		return gatewaytest.WithTool(func(backend string) registry.Tool {
			tl := gatewaytest.ObjectTool(name)(backend)
			tl.OutputSchema, tl.OnInvalidOutput = outSchema, mode
			return tl
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithAdmin(),
		tool("out_good", ""), tool("out_bad", ""), tool("out_bad_pass", registry.OnInvalidOutputPass),
		gatewaytest.WithBackendHandler("out_good", answer(map[string]any{"id": "n1"})),
		gatewaytest.WithBackendHandler("out_bad", answer(map[string]any{"id": 7})),
		gatewaytest.WithBackendHandler("out_bad_pass", answer(map[string]any{"id": 7})))
	for _, tc := range []struct {
		tool, reason string
		isError      bool
	}{
		{"out_good", "a result that satisfies the schema passes", false},
		{"out_bad", "a violation is a tool error naming it (the default)", true},
		{"out_bad_pass", "on_invalid_output pass forwards it", false},
	} {
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: &structpb.Struct{}})
		if err != nil || resp.GetIsError() != tc.isError {
			t.Errorf("%s: %v %v; want is_error=%v (%s)", tc.tool, resp, err, tc.isError, tc.reason)
		}
		if msg := resp.GetResult().GetStringValue(); tc.isError && (!strings.Contains(msg, "output schema") || strings.Contains(msg, "arguments")) {
			t.Errorf("%s: %q; want the message to name the output schema, not arguments", tc.tool, msg)
		}
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range list.Tools {
		if tl.Name == "out_good" {
			found = tl.OutputSchema != nil
		}
	}
	if !found {
		t.Error("tools/list does not carry out_good's outputSchema")
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "out_bad", Arguments: map[string]any{}}); err != nil || !res.IsError {
		t.Errorf("MCP out_bad: %v %v; want isError", res, err)
	}
	fams := scrape(t, env.AdminURL)
	if got := sample(fams, "flowdrop_output_violations_total", map[string]string{"tool": "out_bad"}); got != 2 {
		t.Errorf("violations of out_bad = %v, want 2 (gRPC and MCP)", got)
	}
	if got := sample(fams, "flowdrop_output_violations_total", map[string]string{"tool": "out_bad_pass"}); got != 1 {
		t.Errorf("violations of out_bad_pass = %v, want 1 (passed, still counted)", got)
	}
}
