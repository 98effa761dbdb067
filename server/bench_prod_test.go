package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/loadgen"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/protobuf/types/known/structpb"
)

// BenchmarkInvokeToolProd is the harness's gateway-prod target in process:
// the bench tool and payloads (internal/loadgen) through a gateway running
// tools/bench/prod-policy.yaml — API key on every call, fail-closed audit
// to a temp file with the arguments, the CEL rule, limits, a rate limit
// never reached — next to the same tool with the demo policy ("off"), so
// one `go test -bench 'BenchmarkInvokeTool(Prod)?$'` run gives the
// production policy's cost in CPU and allocations, which a shared machine
// measures more steadily than wall-clock throughput.
func BenchmarkInvokeToolProd(b *testing.B) {
	prod, err := server.LoadPolicyFile(filepath.Join("..", "tools", "bench", "prod-policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	prod.Audit.Path = filepath.Join(b.TempDir(), "audit.jsonl")
	schema, err := structpb.NewStruct(loadgen.BenchToolSchema())
	if err != nil {
		b.Fatal(err)
	}
	benchTool := gatewaytest.WithTool(func(backend string) registry.Tool {
		return registry.Tool{Name: loadgen.BenchTool, Backend: backend, InputSchema: schema}
	})
	handler := gatewaytest.WithBackendHandler(loadgen.BenchTool, loadgen.NewBackend().Invoke)
	policies := []struct {
		name string
		ctx  context.Context
		opts []gatewaytest.Option
	}{
		{"off", context.Background(), nil},
		{"prod", withKey(benchAPIKey), []gatewaytest.Option{gatewaytest.WithPolicy(prod)}},
	}
	for _, pc := range policies {
		b.Run(pc.name, func(b *testing.B) {
			env := gatewaytest.Start(b, append(pc.opts, benchTool, handler, gatewaytest.WithoutRecording())...)
			for _, kind := range []string{loadgen.PayloadClean, loadgen.PayloadRepair} {
				args, err := loadgen.Arguments(kind)
				if err != nil {
					b.Fatal(err)
				}
				req := &gatewayv1.InvokeToolRequest{Tool: loadgen.BenchTool, Arguments: args, CallId: "bench"}
				b.Run(kind, func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := env.Client.InvokeTool(pc.ctx, req); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		})
	}
}

// BenchmarkMCPToolsCallProd is BenchmarkInvokeToolProd on the MCP face: the
// harness's driver (raw JSON-RPC, one session per worker, every answer
// checked) sends the bench payload's tools/call to the bench backend
// through a gateway on tools/bench/prod-policy.yaml ("prod", the key as
// X-API-Key) and on the demo policy ("off"), so the production policy's
// cost on the MCP face is counted in process, next to the gRPC face's.
func BenchmarkMCPToolsCallProd(b *testing.B) {
	prod, err := server.LoadPolicyFile(filepath.Join("..", "tools", "bench", "prod-policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	prod.Audit.Path = filepath.Join(b.TempDir(), "audit.jsonl")
	schema, err := structpb.NewStruct(loadgen.BenchToolSchema())
	if err != nil {
		b.Fatal(err)
	}
	benchTool := gatewaytest.WithTool(func(backend string) registry.Tool {
		return registry.Tool{Name: loadgen.BenchTool, Backend: backend, InputSchema: schema}
	})
	handler := gatewaytest.WithBackendHandler(loadgen.BenchTool, loadgen.NewBackend().Invoke)
	args, err := loadgen.MCPArguments(loadgen.PayloadClean)
	if err != nil {
		b.Fatal(err)
	}
	expect, err := json.Marshal(loadgen.BackendResult())
	if err != nil {
		b.Fatal(err)
	}
	keyed := http.Header{}
	keyed.Set("X-API-Key", benchAPIKey)
	policies := []struct {
		name   string
		header http.Header
		opts   []gatewaytest.Option
	}{
		{"off", http.Header{}, nil},
		{"prod", keyed, []gatewaytest.Option{gatewaytest.WithPolicy(prod)}},
	}
	for _, pc := range policies {
		b.Run(pc.name, func(b *testing.B) {
			env := gatewaytest.Start(b, append(pc.opts, benchTool, handler, gatewaytest.WithMCP(), gatewaytest.WithoutRecording())...)
			ctx := context.Background()
			t, err := loadgen.NewMCPTarget(ctx, loadgen.MCPConfig{URL: env.MCPURL, Tool: loadgen.BenchTool,
				Arguments: args, Expect: expect, Header: pc.header, Sessions: 16})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(t.Close)
			b.ReportAllocs()
			b.SetParallelism(8) // 16 workers on 2 cores: as many as sessions
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := t.Call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
