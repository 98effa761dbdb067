package server

import (
	"context"

	"google.golang.org/grpc"
)

// validateInterceptor adapts pipeline.validate to gRPC. It runs after
// normalizeInterceptor, which put the call state in ctx; without call state
// (not an InvokeTool request) it passes the request through.
func validateInterceptor(p *pipeline) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if c == nil {
			return handler(ctx, req)
		}
		if err := p.validate(ctx, c); err != nil {
			return nil, c.fail(err)
		}
		return handler(ctx, req)
	}
}
