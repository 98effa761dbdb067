package server

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gatewayService is the ToolGatewayService handler: by the time it runs the
// interceptors have normalized and validated the call, so it only forwards.
type gatewayService struct {
	gatewayv1.UnimplementedToolGatewayServiceServer
	p *pipeline
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
