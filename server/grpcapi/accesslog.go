package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// accessLog wraps the logging middleware (inner) so a call whose line would
// not be written costs almost nothing: the middleware builds its fields
// (peer address, timestamps, a context value, the reporter) before it knows
// the outcome. When a successful call's line (at okLevel: INFO by default,
// DEBUG with --log-ok-calls=debug) would not be written, the call runs
// without the middleware; if it fails, the finished call is replayed
// through the middleware with the real start time and duration, so a
// failure's line is exactly the middleware's own.
func accessLog(log *slog.Logger, okLevel slog.Level, inner grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if log.Enabled(ctx, okLevel) {
			return inner(ctx, req, info, handler)
		}
		start := time.Now()
		// A field holder, so what stages add (logging.AddFields: tool, call
		// id) reaches a failure's line.
		ctx = logging.InjectFields(ctx, logging.Fields{})
		resp, err := handler(ctx, req)
		if err == nil || !log.Enabled(ctx, observe.AccessLevel(pipeline.Code(status.Code(err)), okLevel)) {
			return resp, err
		}
		// First occurrence wins in the middleware's field merge, so these
		// replace the replay's own start time and (near-zero) duration.
		ctx = logging.InjectFields(ctx, logging.Fields{
			"grpc.start_time", start.Format(time.RFC3339),
			"grpc.time_ms", fmt.Sprintf("%v", float32(time.Since(start).Nanoseconds()/1000)/1000),
		})
		return inner(ctx, req, info, func(context.Context, any) (any, error) { return resp, err })
	}
}
