package server

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// This file is THE one place the unary interceptor chain is assembled.

// skipInfra matches every service except gRPC health and reflection, which
// must keep answering cheaply and without the tool pipeline.
var skipInfra = selector.MatchFunc(func(_ context.Context, m interceptors.CallMeta) bool {
	switch m.Service {
	case healthpb.Health_ServiceDesc.ServiceName,
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection":
		return false
	}
	return true
})

// unaryChain returns the interceptors in call order (first = outermost).
//
// Recovery is OUTERMOST, not innermost as first sketched: a panic is only
// caught by a recovery that wraps the code that panics, and the normalization
// and validation interceptors run our own code on model input, so they must
// be inside it. The cost is that the logging interceptor does not log a
// panicking call's end; the recovery handler logs it (with the stack) instead.
//
// Then (tracing, when on, is a stats handler, a ServerOption, not an
// interceptor):
// logging → metrics → audit (starts the InvokeTool call state so every
// outcome below, authentication included, gets one audit line) → auth →
// role → rate limit → screen (tool allow/deny, raw-argument limits) →
// normalize → validate → policy (limits on the normalized arguments, CEL
// rules) → handler (in-flight limit, forward). pipeline.invoke runs the
// same stages in the same order for MCP.
func unaryChain(p *pipeline, log *slog.Logger) []grpc.UnaryServerInterceptor {
	// The tool and policy stages are composed into one interceptor behind one
	// selector: each selector builds a CallMeta per call, and gRPC's own
	// chaining allocates a closure per interceptor per call.
	authU, _ := newAuthInterceptor(p.auth)
	roleU, _ := newRoleInterceptor(p.authz)
	return []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(panicHandler(log))),
		selector.UnaryServerInterceptor(accessLog(log, logging.UnaryServerInterceptor(slogAdapter(log),
			logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(okCallsAtDebug))), skipInfra),
		p.metrics.grpc.UnaryServerInterceptor(),
		selector.UnaryServerInterceptor(chainUnary(
			auditInterceptor(p),
			authU,
			noteCallerInterceptor(),
			roleU,
			newRateLimitInterceptor(p.rate),
			stageInterceptor(p.screen),
			normalizeInterceptor(p),
			validateInterceptor(p),
			stageInterceptor(p.policyCheck),
		), skipInfra),
	}
}

// chainUnary composes interceptors (first = outermost) into one. Per call
// it allocates one chainCall, where grpc.ChainUnaryInterceptor allocates a
// handler closure per interceptor.
func chainUnary(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		cc := &chainCall{ics: ics, info: info, final: handler}
		cc.handler = cc.next
		return cc.next(ctx, req)
	}
}

// chainCall is one call's position in a chainUnary chain.
type chainCall struct {
	ics     []grpc.UnaryServerInterceptor
	info    *grpc.UnaryServerInfo
	final   grpc.UnaryHandler
	handler grpc.UnaryHandler // next, bound once per call
	i       int               // the interceptor the next handler call runs
}

// next runs interceptor i with next as its handler. i is restored on
// return, so an interceptor that calls its handler again re-runs the rest
// of the chain, as with gRPC's chaining.
func (cc *chainCall) next(ctx context.Context, req any) (any, error) {
	i := cc.i
	if i == len(cc.ics) {
		return cc.final(ctx, req)
	}
	cc.i = i + 1
	resp, err := cc.ics[i](ctx, req, cc.info, cc.handler)
	cc.i = i
	return resp, err
}

// streamChain is the streaming counterpart (WatchTools): recovery, metrics,
// authentication and roles. The tool stages concern InvokeTool only.
func streamChain(p *pipeline, log *slog.Logger) []grpc.StreamServerInterceptor {
	_, authS := newAuthInterceptor(p.auth, withPolicyMatcher(skipInfra))
	_, roleS := newRoleInterceptor(p.authz, withPolicyMatcher(skipInfra))
	return []grpc.StreamServerInterceptor{
		recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(panicHandler(log))),
		p.metrics.grpc.StreamServerInterceptor(),
		authS,
		roleS,
	}
}

// panicHandler logs the panic with its stack and gives the client only a
// generic Internal status: no stack, no argument values.
func panicHandler(log *slog.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, v any) error {
		method, _ := grpc.Method(ctx)
		attrs := []any{"grpc.method", method, "panic", v, "stack", string(debug.Stack())}
		log.ErrorContext(ctx, "panic while handling a call", attrs...)
		return status.Error(codes.Internal, "internal error")
	}
}

// okCallsAtDebug keeps the per-call access log off the hot path at the
// default level: a successful call is logged at DEBUG, every other code at
// the middleware's default level (WARN/ERROR for failures).
func okCallsAtDebug(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.DefaultServerCodeToLevel(c)
}

// slogAdapter lets the go-grpc-middleware logging interceptor write to slog.
func slogAdapter(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		l.Log(ctx, slog.Level(lvl), msg, fields...)
	})
}
