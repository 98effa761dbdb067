package grpcapi

import (
	"context"
	"log/slog"
	"runtime/debug"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"

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
	return !isInfraService(m.Service)
})

// isInfraService reports whether svc is gRPC health or reflection.
func isInfraService(svc string) bool {
	switch svc {
	case healthpb.Health_ServiceDesc.ServiceName,
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection":
		return true
	}
	return false
}

// unaryChain returns the interceptors in call order (first = outermost).
//
// Recovery is OUTERMOST: a panic is only caught by a recovery that wraps
// the code that panics, and the pipeline's stages run our own code on model
// input, so they must be inside it. The cost is that the logging
// interceptor does not log a panicking call's end; the recovery handler
// logs it (with the stack) instead.
//
// Then (tracing, when on, is a stats handler, a ServerOption, not an
// interceptor): logging → metrics → one composed interceptor behind one
// selector (health and reflection skip it): the call's outcome (InvokeTool,
// and a registry write's audit line: from here on every end,
// authentication included, is recorded once) → authentication → the other
// methods' registry-write caller, roles and rate limit → one adapter per
// pipeline stage, in the pipeline's own order (InvokeTool) → the handler
// (dispatch). Composing them into one interceptor matters: each selector
// builds a CallMeta per call, and gRPC's own chaining allocates a closure
// per interceptor per call.
func unaryChain(cfg *Config, log *slog.Logger) []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(panicHandler(log))),
		accessLog(log, cfg.OKCallsLevel), // health and reflection skip it
		cfg.Metrics.GRPC().UnaryServerInterceptor(),
		selector.UnaryServerInterceptor(chainUnary(toolChain(cfg)...), skipInfra),
	}
}

// toolChain is the composed part of the unary chain, in call order.
func toolChain(cfg *Config) []grpc.UnaryServerInterceptor {
	authU, _ := newAuthInterceptorFrom(callAuth(cfg.Pipeline))
	roleU, _ := newRoleInterceptorFrom(currentAuthz(cfg.Pipeline))
	tool := []grpc.UnaryServerInterceptor{
		outcomeInterceptor(cfg.Pipeline, registryWriteAudit(cfg.Pipeline.Audit())),
		authU,
		otherMethods(chainUnary(registryWriteCaller(cfg.Pipeline.Audit()), roleU,
			newRateLimitInterceptorFrom(func() *policy.RateLimiter { return cfg.Pipeline.Policy().RegistryRate }))),
		streamMethodRole(),
	}
	for i := range cfg.Pipeline.Stages() {
		tool = append(tool, stageInterceptor(cfg.Pipeline, i))
	}
	return tool
}

// invokeStreamChain is the chain an InvokeToolStream call runs once its
// request is read (invoke_stream.go): InvokeTool's access log and tool
// chain. Recovery and metrics are the stream chain's, around the whole
// stream.
func invokeStreamChain(cfg *Config, log *slog.Logger) grpc.UnaryServerInterceptor {
	return chainUnary(append([]grpc.UnaryServerInterceptor{accessLog(log, cfg.OKCallsLevel)}, toolChain(cfg)...)...)
}

// streamMethodRole holds an InvokeToolStream call to the role table's
// entry for InvokeToolStream itself (a table naming methods exactly opens
// it only by naming it); the pipeline's role stage then checks InvokeTool's,
// so a caller needs both. The refusal is the call's outcome (audited).
func streamMethodRole() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod != invokeToolStreamMethod {
			return handler(ctx, req)
		}
		c := pipeline.CallFrom(ctx)
		if c == nil || c.Policy() == nil {
			return nil, status.Error(codes.Internal, "gateway misconfigured: InvokeToolStream ran without its call's policy")
		}
		if az := c.Policy().Authz; az != nil {
			caller, ok := policy.CallerFrom(ctx)
			if !ok {
				return nil, Status(c.Fail(&policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
					Message: "call was not authenticated"})).Err()
			}
			if err := az.AllowMethod(caller, info.FullMethod); err != nil {
				return nil, Status(c.Fail(err)).Err()
			}
		}
		return handler(ctx, req)
	}
}

// callAuth is the Authenticator of a call: an InvokeTool call's own policy
// snapshot (taken when its outcome began, so the whole call runs under one
// policy), the policy in force for other methods.
func callAuth(p *pipeline.Pipeline) func(context.Context) *policy.Authenticator {
	return func(ctx context.Context) *policy.Authenticator {
		if c := pipeline.CallFrom(ctx); c != nil && c.Policy() != nil {
			return c.Policy().Auth
		}
		return p.Policy().Auth
	}
}

// currentAuthz is the Authorizer in force (methods other than InvokeTool).
func currentAuthz(p *pipeline.Pipeline) func() *policy.Authorizer {
	return func() *policy.Authorizer { return p.Policy().Authz }
}

// outcomeInterceptor starts an InvokeTool call's outcome (the call itself
// came from the raw handler, or is built here from a decoded request) and
// records it when the call ends. It sits outside authentication, so a
// refused credential gets its audit line too. Other methods go through
// others (the registry writes' audit lines, which sit there for the same
// reason), so InvokeTool passes no interceptor of theirs.
func outcomeInterceptor(p *pipeline.Pipeline, others grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		r, ok := req.(*gatewayv1.InvokeToolRequest)
		if !ok {
			return others(ctx, req, info, handler)
		}
		c := pipeline.CallFrom(ctx)
		if c == nil {
			c = pipeline.NewCall(r.GetTool(), r.GetCallId(), r.GetArguments())
			ctx = pipeline.WithCall(ctx, c)
		}
		c.SetClientSource(userAgentProduct)
		// The access log (outside us) writes these when the call ends.
		// Bounded prefixes: both are whatever the caller sent.
		addLogFields(ctx, slog.String("flowdrop.tool", policy.Bound(c.Tool)), slog.String("flowdrop.call_id", policy.Bound(c.CallID)))
		p.Begin(c)
		defer func() {
			if n := len(c.Report.Repairs); n > 0 {
				addLogFields(ctx, slog.Int("flowdrop.repairs", n))
			}
			if f := c.Failure(); f != nil && f.Reason != "" {
				addLogFields(ctx, slog.String("flowdrop.reason", string(f.Reason)))
			}
			if f := c.Failure(); f != nil && c.Entry != nil && pipeline.IsBackendFailure(f) {
				// The caller's message names neither; the operator's line does.
				addBackendFields(ctx, c.Entry.Tool.Target(), f)
			}
			if e := p.Finish(ctx, c, err); e != nil {
				resp, err = nil, Status(e).Err() // fail-closed audit withholds the result
			}
		}()
		return handler(ctx, req)
	}
}

// addBackendFields adds a failed backend call's target and cause to the
// call's access line.
func addBackendFields(ctx context.Context, target string, f *pipeline.Error) {
	if f.Cause != nil {
		addLogFields(ctx, slog.String("flowdrop.backend", target), slog.String("flowdrop.cause", f.Cause.Error()))
		return
	}
	addLogFields(ctx, slog.String("flowdrop.backend", target))
}

// stageInterceptor is THE adapter of a pipeline stage to gRPC: it runs
// stage i on the InvokeTool call in ctx; other methods pass through.
func stageInterceptor(p *pipeline.Pipeline, i int) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if c := pipeline.CallFrom(ctx); c != nil {
			if err := p.RunStage(ctx, i, c); err != nil {
				return nil, Status(err).Err()
			}
		}
		return handler(ctx, req)
	}
}

// otherMethods runs ic on every method but InvokeTool and
// InvokeToolStream, whose policy is the pipeline's stages.
func otherMethods(ic grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == pipeline.InvokeMethod || info.FullMethod == invokeToolStreamMethod {
			return handler(ctx, req)
		}
		return ic(ctx, req, info, handler)
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

// streamChain is the streaming counterpart: recovery, metrics,
// authentication and roles for WatchTools; InvokeToolStream passes the
// last two by (streamPolicy), its handler
// running InvokeTool's access log and tool chain on its request
// (invokeStreamChain).
func streamChain(cfg *Config, log *slog.Logger) []grpc.StreamServerInterceptor {
	_, authS := newAuthInterceptorFrom(callAuth(cfg.Pipeline), withPolicyMatcher(streamPolicy))
	_, roleS := newRoleInterceptorFrom(currentAuthz(cfg.Pipeline), withPolicyMatcher(streamPolicy))
	return []grpc.StreamServerInterceptor{
		guardStreamMessages, // outermost: it times the handler's reads
		recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(panicHandler(log))),
		cfg.Metrics.GRPC().StreamServerInterceptor(),
		authS,
		roleS,
	}
}

// streamPolicy matches the streams the stream chain's policy covers: all
// but health, reflection and InvokeToolStream (whose tool chain runs in
// its handler, with the call's audit line).
var streamPolicy = selector.MatchFunc(func(_ context.Context, m interceptors.CallMeta) bool {
	return !isInfraService(m.Service) && m.FullMethod() != invokeToolStreamMethod
})

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

// accessLevels is observe.AccessLevel, the rule both faces log by, as the
// logging middleware's level function.
func accessLevels(ok slog.Level) logging.CodeToLevel {
	return func(c codes.Code) logging.Level { return logging.Level(observe.AccessLevel(pipeline.Code(c), ok)) }
}
