package server_test

import (
	"context"
	"sync"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
)

// TestMCPUpstreamReusesConnections: once warm, calls to an upstream MCP
// server (a real go-sdk server over streamable HTTP, whose answers are
// event streams) open no new TCP connections to it, sequential or 16 at
// a time — at most 0.01 per call. Each answer is read to its end before
// the call returns, and each upstream has an idle pool the size of the
// load; with net/http's default pool of 2, or an answer's stream left
// unread at its end, most concurrent calls would open a connection.
func TestMCPUpstreamReusesConnections(t *testing.T) {
	ctx := context.Background()
	up := mcpupstreamtest.Start(t)
	up.DontRecord()
	env := gatewaytest.Start(t, gatewaytest.WithoutRecording())
	cs, err := mcpupstream.Connect(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := mcpimport.List(ctx, cs)
	cs.Close()
	if err != nil {
		t.Fatal(err)
	}
	tools, _, err := mcpimport.Tools(listed, mcpimport.Options{URL: up.URL, Prefix: "up."})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatal(err)
		}
	}
	req := &gatewayv1.InvokeToolRequest{Tool: "up.add_items", CallId: "conns",
		Arguments: gatewaytest.Args(t, map[string]any{"items": []any{map[string]any{"title": "milk"}}})}
	const workers = 16
	concurrently := func(calls int) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < calls; i += workers {
					if _, err := env.Client.InvokeTool(ctx, req); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	concurrently(4 * workers) // warm-up: the session, and a connection per worker
	warm := up.Accepted()

	const sequential, parallel = 200, 400
	for range sequential {
		if _, err := env.Client.InvokeTool(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	concurrently(parallel)
	opened := up.Accepted() - warm
	if perCall := float64(opened) / (sequential + parallel); perCall > 0.01 {
		t.Errorf("%d new connections to the upstream over %d calls after warm-up (%.3f per call), want at most 0.01 per call",
			opened, sequential+parallel, perCall)
	}
	t.Logf("connections: %d during warm-up, %d over %d calls after it", warm, opened, sequential+parallel)
}
