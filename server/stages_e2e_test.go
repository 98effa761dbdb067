package server_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestBothFacesRunTheOneStageList: an InvokeTool call and an MCP tools/call
// run exactly the pipeline's stage list, in its order — so a stage added
// to the list runs on both faces with no other edit.
func TestBothFacesRunTheOneStageList(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string][]string{} // call id -> stages
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.StageHook = func(stage string, c *pipeline.Call) {
			mu.Lock()
			defer mu.Unlock()
			seen[c.CallID] = append(seen[c.CallID], stage)
		}
	}))
	ctx := testCtx(t)
	if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", CallId: "via-grpc",
		Arguments: gatewaytest.Args(t, map[string]any{"title": "a &amp; b"})}); err != nil {
		t.Fatal(err)
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(`{"title":"a &amp; b"}`),
		Meta: mcp.Meta{"flowdrop/call_id": "via-mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	names := env.Gateway.StageNames()
	want := names[:len(names)-1] // the hook runs before each stage; dispatch is not one
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"via-grpc", "via-mcp"} {
		if !slices.Equal(seen[id], want) {
			t.Errorf("%s ran stages %v, want the pipeline's list %v", id, seen[id], want)
		}
	}
}
