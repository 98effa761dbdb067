package bareproxy_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/bareproxy"
)

type fastBackend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
	resp *gatewayv1.InvokeResponse
}

func (b *fastBackend) Invoke(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	return b.resp, nil
}

// BenchmarkHop measures one unary call over 127.0.0.1: straight to the
// backend, through the bare proxy, and through the decode proxy. The
// end-to-end harness with the gateway is tools/bench/run.sh.
func BenchmarkHop(b *testing.B) {
	bs := grpc.NewServer()
	gatewayv1.RegisterToolBackendServiceServer(bs, &fastBackend{resp: &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ok")}})
	beAddr := serve(b, bs)
	args, _ := structpb.NewStruct(map[string]any{"title": "Ember & Oak", "labels": []any{"a", "b"}, "n": 3.0, "o": map[string]any{"k": "v"}})
	body, err := proto.Marshal(&gatewayv1.InvokeToolRequest{Tool: "bench_tool", Arguments: args, CallId: "c"})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		proxy  bool
		decode bool
	}{{"direct", false, false}, {"bare", true, false}, {"decode", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			addr, method := beAddr, gatewayv1.ToolBackendService_Invoke_FullMethodName
			if tc.proxy {
				p := bareproxy.New(dial(b, beAddr), bareproxy.Options{Decode: tc.decode})
				addr, method = serve(b, grpc.NewServer(p.ServerOptions()...)), gatewayv1.ToolGatewayService_InvokeTool_FullMethodName
			}
			cc := dial(b, addr)
			req := bareproxy.NewFrame(body)
			opt := grpc.ForceCodecV2(bareproxy.Codec{})
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var resp bareproxy.Frame
					if err := cc.Invoke(context.Background(), method, req, &resp, opt); err != nil {
						b.Error(err)
						return
					}
					resp.Free()
				}
			})
		})
	}
}
