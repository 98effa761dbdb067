package server

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
)

// normalizeInterceptor adapts pipeline.normalize to gRPC: it starts the call
// state, replaces the request's arguments with the normalized ones before the
// handler runs (the request message is ours to change), and copies the
// repairs into the response. Requests other than InvokeTool pass through.
func normalizeInterceptor(p *pipeline) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*gatewayv1.InvokeToolRequest)
		if !ok {
			return handler(ctx, req)
		}
		// The audit interceptor or the raw handler (outside) started the call
		// state; without them (unit tests) start it here.
		c := callFrom(ctx)
		if c == nil {
			c = &call{tool: r.GetTool(), args: r.GetArguments(), callID: r.GetCallId()}
			ctx = withCall(ctx, c)
		}
		c.caller = callerFromContext(ctx)
		// The logging interceptor (outside us) reads these when the call ends.
		logging.AddFields(ctx, logging.Fields{"flowdrop.tool", c.tool, "flowdrop.call_id", c.callID})
		// Received raw (rawpath.go): forward it as is, or decode the
		// arguments and continue below.
		if raw := c.raw; raw != nil && r.Arguments == nil {
			if resp, done, err := p.invokeRaw(ctx, c, r, raw); done {
				return resp, err
			}
		}
		if err := p.normalize(ctx, c); err != nil {
			return nil, c.fail(err)
		}
		r.Arguments = c.args
		if n := len(c.report.Repairs); n > 0 {
			logging.AddFields(ctx, logging.Fields{"flowdrop.repairs", n})
		}
		resp, err := handler(ctx, req)
		if err != nil {
			return resp, err
		}
		if out, ok := resp.(*gatewayv1.InvokeToolResponse); ok {
			out.Repairs = repairsProto(c.report.Repairs)
		}
		return resp, nil
	}
}
