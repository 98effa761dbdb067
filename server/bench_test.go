package server_test

import (
	"context"
	"encoding/json"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkInvokeTool measures one InvokeTool round trip through the whole
// gateway (chain, normalization, validation, forwarding) to the example
// backend over loopback TCP, in parallel. Compare with a bare pass-through
// proxy (internal/bareproxy) for the gateway's own cost.
func BenchmarkInvokeTool(b *testing.B) {
	cases := []struct {
		name string
		args map[string]any
	}{
		{"clean", map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "hello"}},
		{"repaired", map[string]any{"title": "Ember &amp;amp; Oak", "tags": `["a","b"]`, "body": "hello"}},
	}
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording())
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(b, tc.args), CallId: "bench"}
			invokeParallel(b, env.Client, req)
		})
	}
}

// BenchmarkMCPToolsCall measures one MCP tools/call through the gateway's
// streamable HTTP endpoint (stateless, JSON-RPC over HTTP/1.1 on loopback)
// with the MCP SDK's own client, to the same backend as BenchmarkInvokeTool:
// the MCP path's cost next to the gRPC path's.
func BenchmarkMCPToolsCall(b *testing.B) {
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording(), gatewaytest.WithMCP())
	ctx := context.Background()
	cs := mustConnect(b, ctx, env.MCPURL, mcpClientOpts{})
	cases := []struct {
		name string
		args string
	}{
		{"clean", `{"title":"Ember & Oak","tags":["a","b"],"body":"hello"}`},
		{"repaired", `{"title":"Ember &amp;amp; Oak","tags":"[\"a\",\"b\"]","body":"hello"}`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			params := &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(tc.args)}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := cs.CallTool(ctx, params)
					if err != nil || res.IsError {
						b.Errorf("tools/call: %v %v", err, res)
						return
					}
				}
			})
		})
	}
}

// BenchmarkInvokeToolRateLimit is one clean InvokeTool with no rate limit,
// with the local limiter, and with the limit decided in a real
// redis-server on loopback (one GCRA script per call): the Redis limit's
// per-call cost, all three in one run. The limit is high enough that no
// call is refused.
func BenchmarkInvokeToolRateLimit(b *testing.B) {
	rs := redistest.Start(b)
	limited := server.DemoPolicy()
	limited.RateLimit = policy.RateLimitConfig{Rate: 1e9, Burst: 1e9}
	cases := []struct {
		name string
		opts []gatewaytest.Option
	}{
		{"off", nil},
		{"local", []gatewaytest.Option{gatewaytest.WithPolicy(limited)}},
		{"redis", []gatewaytest.Option{gatewaytest.WithPolicy(limited), gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() })}},
	}
	args := map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "hello"}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			env := gatewaytest.Start(b, append(tc.opts, gatewaytest.WithoutRecording())...)
			req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(b, args), CallId: "bench"}
			invokeParallel(b, env.Client, req)
		})
	}
}

// invokeParallel is the benchmark's body: req through InvokeTool from
// GOMAXPROCS goroutines, allocations reported.
func invokeParallel(b *testing.B, client gatewayv1.ToolGatewayServiceClient, req *gatewayv1.InvokeToolRequest) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.InvokeTool(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
