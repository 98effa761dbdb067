package server

import (
	"context"
	"sync"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gatewayService is the ToolGatewayService handler: by the time it runs the
// interceptors have normalized and validated the call, so it only forwards.
type gatewayService struct {
	gatewayv1.UnimplementedToolGatewayServiceServer
	p *pipeline

	// The raw handler's per-server values (rawpath.go), built once instead
	// of per call.
	rawOnce    sync.Once
	rawInfo    *grpc.UnaryServerInfo
	rawHandler grpc.UnaryHandler
}

// rawBound returns the UnaryServerInfo and the handler rawInvokeToolHandler
// passes to the interceptor chain; both are the same for every call.
func (g *gatewayService) rawBound() (*grpc.UnaryServerInfo, grpc.UnaryHandler) {
	g.rawOnce.Do(func() {
		g.rawInfo = &grpc.UnaryServerInfo{Server: g, FullMethod: gatewayv1.ToolGatewayService_InvokeTool_FullMethodName}
		g.rawHandler = func(ctx context.Context, req any) (any, error) {
			return g.InvokeTool(ctx, req.(*gatewayv1.InvokeToolRequest))
		}
	})
	return g.rawInfo, g.rawHandler
}

func (g *gatewayService) InvokeTool(ctx context.Context, _ *gatewayv1.InvokeToolRequest) (*gatewayv1.InvokeToolResponse, error) {
	c := callFrom(ctx)
	if c == nil {
		// Only possible if chain.go stopped installing the pipeline interceptors.
		return nil, status.Error(codes.Internal, "gateway misconfigured: InvokeTool reached the handler without the pipeline")
	}
	resp, err := g.p.dispatch(ctx, c)
	if err != nil {
		return nil, c.fail(err)
	}
	// Repairs are added by normalizeInterceptor on the way out.
	return &gatewayv1.InvokeToolResponse{Result: resp.GetResult(), IsError: resp.GetIsError()}, nil
}
