package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// policyState is the pipeline's policy part (embedded in pipeline, so the
// fields read p.auth, p.authz, …). Every field may be nil/zero: then that
// check is off. Built once by newPolicyState from Config.Policy.
type policyState struct {
	auth     *policy.Authenticator
	authz    *policy.Authorizer
	rules    *policy.Rules
	limits   policy.Limits
	inflight *policy.InFlight
	rate     *policy.RateLimiter
	audit    *policy.AuditSink
	metrics  *metrics
	log      *slog.Logger

	// otelPropagates: tracing is on and the otelgrpc handlers carry the
	// trace context to backends; otherwise forward.go copies it (run.go).
	otelPropagates bool

	// redactors caches one *policy.Redactor per registry entry (a tool
	// revision): building one walks the schema, so never per call.
	redactors sync.Map // *registry.Entry -> *policy.Redactor
}

// callPolicy is what the policy stages and the audit line need to remember
// about one call (a field of call).
type callPolicy struct {
	start      time.Time
	sent       *structpb.Struct // the arguments as the model sent them
	validation string           // "ok" | "failed" | "" (not reached)
	violations []string
	backend    string // the backend's status code name, if called
	err        error  // the domain error a gRPC stage adapter mapped (fail)
	caller     policy.Caller
	hasCaller  bool
}

// init builds the policy objects from cfg. ctx bounds a JWKS fetch.
func (ps *policyState) init(ctx context.Context, cfg *PolicyConfig, m *metrics, log *slog.Logger) error {
	ps.metrics, ps.log, ps.limits = m, log, cfg.Limits
	var err error
	if ps.auth, err = policy.NewAuthenticator(ctx, cfg.Auth); err != nil {
		return err
	}
	fail := func(err error) error { ps.close(); return err }
	if ps.authz, err = policy.NewAuthorizer(cfg.Authz); err != nil {
		return fail(err)
	}
	if ps.rules, err = policy.NewRules(cfg.Rules); err != nil {
		return fail(err)
	}
	if ps.rate, err = policy.NewRateLimiter(cfg.RateLimit); err != nil {
		return fail(err)
	}
	ps.inflight = policy.NewInFlight(cfg.Limits.MaxInFlightPerTool)
	switch cfg.Audit.Path {
	case "":
	case "-":
		ps.audit = policy.NewWriterSink(os.Stdout, policy.AuditSinkOptions{})
	default:
		if ps.audit, err = policy.OpenFileSink(cfg.Audit.Path, policy.AuditSinkOptions{RotateBytes: cfg.Audit.RotateBytes}); err != nil {
			return fail(err)
		}
	}
	return nil
}

// close releases the JWKS refresh and flushes the audit log.
func (ps *policyState) close() error {
	if ps.auth != nil {
		ps.auth.Close()
	}
	if ps.audit != nil {
		return ps.audit.Close()
	}
	return nil
}

// authenticateHTTP authenticates an HTTP request (the MCP endpoint) with the
// same Authenticator as gRPC: "Authorization: Bearer …" and "X-API-Key"
// headers, and the verified client certificate chain. It returns the caller
// or a *policy.Error (never echoing a credential).
func (p *pipeline) authenticateHTTP(r *http.Request) (policy.Caller, error) {
	if p.auth == nil {
		return policy.Caller{}, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
			Message: "authentication is not configured"}
	}
	var c policy.Credentials
	c.APIKey = r.Header.Get("X-API-Key")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
			return policy.Caller{}, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMalformed,
				Message: `authorization header must be "Bearer <token>"`}
		}
		c.Bearer = tok
	}
	// Only a chain the handshake verified identifies a caller.
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		c.PeerCerts = r.TLS.VerifiedChains[0]
	}
	return p.auth.Authenticate(r.Context(), c)
}

// invokeMethod is the full gRPC method name of InvokeTool; the role table
// decides who may invoke tools on every transport by this name.
var invokeMethod = gatewayv1.ToolGatewayService_InvokeTool_FullMethodName

// admit is the caller-dependent part of the chain for transports without
// interceptors (MCP): the role check and the rate limit, exactly what the
// gRPC role and rate-limit interceptors do. The caller must be in ctx
// (policy.WithCaller) — the transport authenticated it.
func (p *pipeline) admit(ctx context.Context, c *call) error {
	if p.auth == nil {
		return nil // no policy configured (unit tests)
	}
	caller, ok := policy.CallerFrom(ctx)
	if !ok {
		return &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing, Message: "call was not authenticated"}
	}
	if p.authz != nil {
		if err := p.authz.AllowMethod(caller, invokeMethod); err != nil {
			return err
		}
	}
	return p.rate.Allow(caller, c.tool)
}

// screen runs before normalization: the tool allow/deny lists (deny early:
// cheaper, and a denied caller learns nothing about the tool, not even
// whether it exists) and the size limits on the arguments as sent (to bound
// normalization's work).
func (p *pipeline) screen(ctx context.Context, c *call) error {
	if p.authz != nil {
		caller, ok := policy.CallerFrom(ctx)
		if !ok {
			return &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing, Message: "call was not authenticated"}
		}
		if err := p.authz.AllowTool(caller, c.tool); err != nil {
			return err
		}
	}
	return p.limits.Check(c.tool, c.args)
}

// policyCheck runs after normalize and validate: the limits again on the
// normalized arguments (JSON decoding can grow and deepen them) and the CEL
// rules, which so judge the decoded form the tool will receive.
func (p *pipeline) policyCheck(ctx context.Context, c *call) error {
	if err := p.limits.Check(c.tool, c.args); err != nil {
		return err
	}
	caller, _ := policy.CallerFrom(ctx)
	return p.rules.Evaluate(ctx, caller, c.tool, c.args)
}

// dispatch is the handler stage: the in-flight limit around forward, and
// the backend latency metric.
func (p *pipeline) dispatch(ctx context.Context, c *call) (*gatewayv1.InvokeResponse, error) {
	release, err := p.inflight.Acquire(c.tool)
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	resp, err := p.forward(ctx, c)
	code := "OK"
	if err != nil {
		code = status.Code(grpcError(err)).String()
	}
	if c.entry != nil {
		c.pol.backend = code
	}
	p.metrics.observeBackend(c.tool, code, time.Since(start))
	return resp, err
}

// beginCall records what the audit line needs from the start of a call.
func beginCall(c *call) {
	c.pol.start = time.Now()
	c.pol.sent = c.args
}

// finish records the call's outcome — the audit line and the metrics — once
// per call, whatever stage ended it. err is the pipeline's (domain) error.
// A successful call without an audit sink costs only the repair counters.
func (p *pipeline) finish(ctx context.Context, c *call, err error) {
	if c.pol.start.IsZero() {
		return
	}
	if c.pol.err != nil {
		err = c.pol.err
	}
	known := c.entry != nil // the tool label only takes registered names (bounded cardinality)
	label := "_unknown"
	if known {
		label = c.tool
	}
	decision, reason := policy.DecisionAllow, ""
	if err != nil {
		decision, reason = p.failureOutcome(c, label, err)
	}
	for _, r := range c.report.Repairs {
		p.metrics.repair(label, r.Kind.String())
	}
	if p.audit == nil {
		return
	}
	rec := policy.AuditRecord{
		Time:        c.pol.start,
		Tool:        c.tool,
		CallID:      c.callID,
		Decision:    decision,
		Reason:      reason,
		Repairs:     policy.RepairsFromReport(c.report),
		Validation:  c.pol.validation,
		Violations:  c.pol.violations,
		BackendCode: c.pol.backend,
		LatencyMS:   float64(time.Since(c.pol.start).Microseconds()) / 1000,
	}
	if caller, ok := policy.CallerFrom(ctx); ok {
		rec.CallerSubject, rec.CallerMethod = caller.Subject, caller.Method
	} else if c.pol.hasCaller {
		rec.CallerSubject, rec.CallerMethod = c.pol.caller.Subject, c.pol.caller.Method
	}
	var red *policy.Redactor
	if known {
		red = p.redactor(c.entry)
	} else {
		// No schema to say what is sensitive: log no values at all.
		rec.ArgsSent = nil
		p.writeAudit(rec)
		return
	}
	repaired := c.args
	if c.args == c.pol.sent {
		repaired = nil
	}
	if err := rec.SetArgs(red, c.pol.sent, repaired); err != nil {
		rec.ArgsSent, rec.ArgsRepaired = nil, nil
	}
	p.writeAudit(rec)
}

// failureOutcome classifies a failed call for the audit line (decision and
// reason) and counts it in the metrics: policy denials, validation failures
// (whose violations it records on c) and other errors.
func (p *pipeline) failureOutcome(c *call, label string, err error) (decision, reason string) {
	ve := validationErrorOf(err)
	if ve != nil {
		c.pol.validation = "failed"
		for _, v := range ve.Violations {
			c.pol.violations = append(c.pol.violations, v.Pointer+": "+v.Message)
		}
	}
	if pe, ok := policy.AsError(err); ok {
		p.metrics.policyDenial(label, pe.Reason)
		return policy.DecisionDeny, pe.Reason
	}
	if reason, ok := policyReasonOf(err); ok {
		p.metrics.policyDenial(label, reason)
		return policy.DecisionDeny, reason
	}
	if ve != nil {
		p.metrics.validationFailure(label)
		return policy.DecisionDeny, "validation-failed"
	}
	return policy.DecisionError, status.Code(grpcError(err)).String()
}

// validationErrorOf is errors.As for a *registry.ValidationError, in its
// own function: the target escapes to errors.As, so declaring it in finish
// would allocate on every call, successful ones included (noinline keeps
// it out of finish).
//
//go:noinline
func validationErrorOf(err error) *registry.ValidationError {
	var ve *registry.ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	return nil
}

func (p *pipeline) writeAudit(rec policy.AuditRecord) {
	if err := p.audit.Write(rec); err != nil && p.log != nil {
		p.log.Warn("audit record not written", "error", err.Error())
	}
}

// redactor returns the cached Redactor for a tool revision.
func (p *pipeline) redactor(e *registry.Entry) *policy.Redactor {
	if r, ok := p.redactors.Load(e); ok {
		return r.(*policy.Redactor)
	}
	r, _ := p.redactors.LoadOrStore(e, policy.NewRedactor(e.Tool.InputSchema))
	return r.(*policy.Redactor)
}

// callerProto is the caller identity sent to backends. The anonymous
// caller of "auth off" carries no roles: they are a gateway convenience,
// not something a backend should trust.
func callerProto(c policy.Caller) *gatewayv1.Caller {
	out := &gatewayv1.Caller{Subject: c.Subject, Method: c.Method}
	if c.Method != policy.MethodNone {
		out.Roles = append([]string(nil), c.Roles...)
	}
	return out
}

// fail records a stage's domain error for the audit line and maps it to a
// gRPC status (the gRPC adapters return statuses, which lose the type).
func (c *call) fail(err error) error {
	c.pol.err = err
	return grpcError(err)
}

// auditInterceptor starts the call state for InvokeTool (so every later
// stage, including authentication, ends in exactly one audit line) and
// writes the audit line when the call ends. It sits outside authentication.
func auditInterceptor(p *pipeline) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		r, ok := req.(*gatewayv1.InvokeToolRequest)
		if !ok {
			return handler(ctx, req)
		}
		// The raw handler (rawpath.go) may have started it already.
		c := callFrom(ctx)
		if c == nil {
			c = &call{tool: r.GetTool(), args: r.GetArguments(), callID: r.GetCallId()}
			ctx = withCall(ctx, c)
		}
		beginCall(c)
		defer func() { p.finish(ctx, c, err) }()
		return handler(ctx, req)
	}
}

// noteCallerInterceptor copies the authenticated caller into the call
// state, for the audit line (the audit interceptor sits outside
// authentication and cannot see its context).
func noteCallerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if c := callFrom(ctx); c != nil {
			c.pol.caller, c.pol.hasCaller = policy.CallerFrom(ctx)
		}
		return handler(ctx, req)
	}
}

// stageInterceptor adapts a pipeline stage to gRPC for InvokeTool calls.
func stageInterceptor(stage func(context.Context, *call) error) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if c := callFrom(ctx); c != nil {
			if err := stage(ctx, c); err != nil {
				return nil, c.fail(err)
			}
		}
		return handler(ctx, req)
	}
}

// policyReasonOf finds the policy reason in a status error made by the
// policy interceptors (authentication, roles, rate limit).
func policyReasonOf(err error) (string, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return "", false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == policyErrorDomain {
			if r, ok := info.GetMetadata()["policy_reason"]; ok {
				return r, true
			}
		}
	}
	return "", false
}

// visibleTool is the ListTools filter: a caller sees only the tools it may invoke.
func (p *pipeline) visibleTool(ctx context.Context, name string) bool {
	if p.authz == nil {
		return true
	}
	c, ok := policy.CallerFrom(ctx)
	return ok && p.authz.AllowTool(c, name) == nil
}

// pruneRedactors forgets the Redactors of tool revisions no longer
// registered (called on each registry change), so the cache stays bounded.
func (p *pipeline) pruneRedactors(live []*registry.Entry) {
	keep := make(map[*registry.Entry]bool, len(live))
	for _, e := range live {
		keep[e] = true
	}
	p.redactors.Range(func(k, _ any) bool {
		if !keep[k.(*registry.Entry)] {
			p.redactors.Delete(k)
		}
		return true
	})
}
