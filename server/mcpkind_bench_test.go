package server_test

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/server"
)

// BenchmarkMCPUpstream is the per-call cost of an upstream MCP tool
// through the gateway (over gRPC InvokeTool and over the gateway's MCP
// face) next to the go-sdk client calling the same upstream tool
// directly with the same arguments, all on loopback in one run
// (BENCHMARKS.md).
func BenchmarkMCPUpstream(b *testing.B) {
	ctx := context.Background()
	up := mcpupstreamtest.Start(b)
	up.DontRecord()
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording(), gatewaytest.WithMCP())
	direct, err := mcpupstream.Connect(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	listed, err := mcpimport.List(ctx, direct)
	if err != nil {
		b.Fatal(err)
	}
	tools, _, err := mcpimport.Tools(listed, mcpimport.Options{URL: up.URL, Prefix: "up."})
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tools {
		if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: t}); err != nil {
			b.Fatal(err)
		}
	}
	viaMCP := mustConnect(b, ctx, env.MCPURL, mcpClientOpts{})
	args := map[string]any{"items": []any{map[string]any{"title": "milk"}, map[string]any{"title": "eggs"}}}
	gatewayReq := &gatewayv1.InvokeToolRequest{Tool: "up.add_items", Arguments: gatewaytest.Args(b, args), CallId: "bench"}

	callMCP := func(b *testing.B, cs *mcp.ClientSession, name string) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil || res.IsError {
					b.Error(err, res)
					return
				}
			}
		})
	}
	b.Run("direct", func(b *testing.B) { callMCP(b, direct, "add_items") })
	b.Run("gateway-grpc", func(b *testing.B) {
		invokeParallel(b, env.Client, gatewayReq)
	})
	b.Run("gateway-mcp", func(b *testing.B) { callMCP(b, viaMCP, "up.add_items") })
}

// BenchmarkMCPStdioUpstream is the per-call cost of a stdio MCP server's
// tool (the test binary's echo, TestMain) through the gateway's gRPC
// InvokeTool next to the go-sdk client calling it over its own stdio
// process directly, in one run (BENCHMARKS.md).
func BenchmarkMCPStdioUpstream(b *testing.B) {
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	helper := mcpupstream.Command{Path: self, Env: map[string]string{stdioUpstreamEnv: "serve", stdioStartsEnv: os.DevNull}}
	p := server.DemoPolicy()
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"helper": helper}
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording(), gatewaytest.WithPolicy(p))
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}})
	if err != nil {
		b.Fatal(err)
	}
	tool := &gatewayv1.Tool{Name: "s.echo", InputSchema: schema,
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: "stdio://helper", Tool: "echo"}}}}
	if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
		b.Fatal(err)
	}
	direct, err := mcpupstream.ConnectCommand(ctx, helper, mcpupstream.ConnectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	args := map[string]any{"text": "milk"}
	gatewayReq := &gatewayv1.InvokeToolRequest{Tool: "s.echo", Arguments: gatewaytest.Args(b, args), CallId: "bench"}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil || res.IsError {
					b.Error(err, res)
					return
				}
			}
		})
	})
	b.Run("gateway-grpc", func(b *testing.B) {
		invokeParallel(b, env.Client, gatewayReq)
	})
}
