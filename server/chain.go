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
// Then (tracing is a stats handler, a ServerOption, not an interceptor):
// logging → metrics → audit (starts the InvokeTool call state so every
// outcome below, authentication included, gets one audit line) → auth →
// role → rate limit → screen (tool allow/deny, raw-argument limits) →
// normalize → validate → policy (limits on the normalized arguments, CEL
// rules) → handler (in-flight limit, forward). pipeline.invoke runs the
// same stages in the same order for MCP.
func unaryChain(p *pipeline, log *slog.Logger) []grpc.UnaryServerInterceptor {
	authU, _ := newAuthInterceptor(p.auth, withPolicyMatcher(skipInfra))
	roleU, _ := newRoleInterceptor(p.authz, withPolicyMatcher(skipInfra))
	return []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(panicHandler(log))),
		selector.UnaryServerInterceptor(accessLog(log, logging.UnaryServerInterceptor(slogAdapter(log),
			logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(okCallsAtDebug))), skipInfra),
		p.metrics.grpc.UnaryServerInterceptor(),
		auditInterceptor(p),
		authU,
		noteCallerInterceptor(),
		roleU,
		newRateLimitInterceptor(p.rate, withPolicyMatcher(skipInfra)),
		stageInterceptor(p.screen),
		selector.UnaryServerInterceptor(normalizeInterceptor(p), skipInfra),
		selector.UnaryServerInterceptor(validateInterceptor(p), skipInfra),
		stageInterceptor(p.policyCheck),
	}
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
