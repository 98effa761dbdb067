package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Lookup is what the pipeline needs from the registry: a lock-free lookup
// of a tool's compiled entry (registry.Registry and registry.Snapshot).
type Lookup interface {
	Lookup(name string) (*registry.Entry, bool)
}

// resolver is a Lookup that also knows the tools' provider-safe export
// names (registry.Registry, registry.Snapshot).
type resolver interface {
	Resolve(name string) (*registry.Entry, bool)
}

// Config is what a Pipeline is built from. Every policy field may be
// nil/zero: then that check is off.
type Config struct {
	Registry Lookup
	Backend  Backend

	// RequireCaller refuses calls no face authenticated (the gateway always
	// sets it; a pipeline without it treats them as anonymous).
	RequireCaller bool
	Authz         *policy.Authorizer
	RateLimit     *policy.RateLimiter
	Limits        policy.Limits
	Rules         *policy.Rules
	InFlight      *policy.InFlight
	// Auth and RegistryRate are the faces' part of the policy (Policy).
	Auth         *policy.Authenticator
	RegistryRate *policy.RateLimiter
	// Idempotency makes calls with an idempotency key run once
	// (idempotency.go); nil: keys are checked, then ignored.
	Idempotency *Idempotency

	// ForwardEntityBound lets a call through whose argument was still
	// changing when entity decoding reached its pass bound (the value is
	// forwarded as left after the last pass). Off (the default), such a
	// call is refused: a rule judged the still-escaped text, not what the
	// tool may decode from it.
	ForwardEntityBound bool
	// OptionalNulls says per tool whether a null sent for an optional
	// property whose schema does not admit null is removed before
	// validation (an extension outside RT-TOOL-8; nil: never).
	OptionalNulls *policy.OptionalNulls

	// Recorders receive every call's outcome (metrics).
	Recorders []Recorder
	// Audit writes every call's audit line (nil: no audit); under
	// fail-closed it also gates calls (AuditRecorder).
	Audit *AuditRecorder

	// DisableFastPaths makes every call decode its arguments and take the
	// general normalization and validation paths (the raw wire checks are
	// skipped). Results are the same either way; tests hold them equal.
	DisableFastPaths bool

	// StageHook, when set, runs before each stage with its name (tests use
	// it to fail or panic inside the pipeline).
	StageHook func(stage string, c *Call)

	Log *slog.Logger
}

// Pipeline runs tool calls through the stages (stages.go) and dispatches
// them to the backend. It is safe for concurrent use. Its policy objects
// are a snapshot (Policy) that SetPolicy swaps atomically; cfg's policy
// fields are only the first snapshot.
type Pipeline struct {
	cfg    Config
	pol    atomic.Pointer[Policy]
	stages []Stage
	fast   bool
	stats  struct{ forwarded, decoded atomic.Int64 }

	// detached are the claimed idempotent runs going on past their
	// callers; life ends them at shutdown (CloseDetached).
	detached runGroup
	life     context.Context
	endLife  context.CancelFunc
	// orphans counts the claims being released after a Claim whose
	// answer was lost (idempotency_orphan.go).
	orphans atomic.Int64
}

// New builds a pipeline.
func New(cfg Config) *Pipeline {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Pipeline{cfg: cfg, fast: !cfg.DisableFastPaths}
	p.life, p.endLife = context.WithCancel(context.Background())
	p.SetPolicy(Policy{Auth: cfg.Auth, Authz: cfg.Authz, RateLimit: cfg.RateLimit, Limits: cfg.Limits, Rules: cfg.Rules,
		InFlight: cfg.InFlight, ForwardEntityBound: cfg.ForwardEntityBound, OptionalNulls: cfg.OptionalNulls,
		RegistryRate: cfg.RegistryRate})
	p.stages = p.stageList()
	return p
}

// Limits returns the argument limits in force now (defaults filled in), for
// a face that parses arguments itself (MCP's JSON).
func (p *Pipeline) Limits() policy.Limits { return p.Policy().Limits }

// Stages returns the stage list (for faces that run one stage at a time).
func (p *Pipeline) Stages() []Stage { return p.stages }

// Audit is the pipeline's audit recorder (nil: no audit), which the faces
// also give registry writes to.
func (p *Pipeline) Audit() *AuditRecorder { return p.cfg.Audit }

// FastPaths reports whether the raw wire checks are on.
func (p *Pipeline) FastPaths() bool { return p.fast }

// Stats counts, since New, calls whose received bytes were forwarded as
// they came and argument decodes of received bytes. Tests compare deltas.
type Stats struct{ Forwarded, Decoded int64 }

// Stats returns the counters.
func (p *Pipeline) Stats() Stats {
	return Stats{Forwarded: p.stats.forwarded.Load(), Decoded: p.stats.decoded.Load()}
}

// Begin starts a call's outcome: from here on exactly one Finish records
// it, whatever stage ends it.
func (p *Pipeline) Begin(c *Call) {
	c.start = time.Now()
	c.p = p
	c.args.attach(p)
	if c.pol == nil {
		c.pol = p.pol.Load()
	}
}

// policyOf is c's policy snapshot; a call run without Begin takes the one
// in force.
func (p *Pipeline) policyOf(c *Call) *Policy {
	if c.pol == nil {
		c.pol = p.pol.Load()
	}
	return c.pol
}

// RunStage runs stage i on c. A refusal is recorded on c and returned as
// an *Error.
func (p *Pipeline) RunStage(ctx context.Context, i int, c *Call) *Error {
	s := &p.stages[i]
	if h := p.cfg.StageHook; h != nil {
		h(s.Name, c)
	}
	start := time.Now()
	err := s.Run(ctx, c)
	if i < len(c.stageTime) {
		c.stageTime[i] = time.Since(start)
	}
	if err != nil {
		return p.fail(c, err)
	}
	return nil
}

// Invoke runs every stage in order, then dispatches: the entry point for
// faces without an interceptor chain (MCP). The face has authenticated the
// caller (policy.WithCaller on ctx). It records the outcome itself.
func (p *Pipeline) Invoke(ctx context.Context, c *Call) (res Result, err *Error) {
	p.Begin(c)
	defer func() {
		if e := p.Finish(ctx, c, err); e != nil {
			res, err = Result{}, e
		}
	}()
	for i := range p.stages {
		if err := p.RunStage(ctx, i, c); err != nil {
			return Result{}, err
		}
	}
	return p.Dispatch(ctx, c)
}

// Dispatch is the last stage: the in-flight limit, then the backend; a
// call with an idempotency key goes through the idempotency store.
func (p *Pipeline) Dispatch(ctx context.Context, c *Call) (Result, *Error) {
	if c.IdempotencyKey != "" && p.cfg.Idempotency != nil {
		return p.dispatchOnce(ctx, c)
	}
	return p.dispatch(ctx, c)
}

// dispatch is Dispatch without idempotency.
func (p *Pipeline) dispatch(ctx context.Context, c *Call) (Result, *Error) {
	inFlight := p.policyOf(c).InFlight
	if err := inFlight.Enter(c.Tool); err != nil {
		return Result{}, p.fail(c, err)
	}
	defer inFlight.Leave(c.Tool)
	if rcv, ok := c.args.WireForBackend(); ok && rcv.Message != nil {
		p.stats.forwarded.Add(1)
	}
	start := time.Now()
	res, err := p.cfg.Backend.Invoke(ctx, c)
	code := "OK"
	var e *Error
	if err != nil {
		e = p.fail(c, err)
		code = e.Code.String()
	}
	c.backend = code
	c.backendTime = time.Since(start)
	for _, r := range p.cfg.Recorders {
		r.RecordBackend(c.BackendTool(), code, c.backendTime)
	}
	if e == nil {
		res = guardResultSize(c, res)
		if c.Entry.Output != nil {
			res = p.checkOutput(ctx, c, res)
		}
	}
	return res, e
}

// checkOutput holds a result to the tool's output schema (tool errors are
// not checked): a result that fails it is counted (Outcome.OutputInvalid)
// and logged, and answered per on_invalid_output — a tool error naming the
// violations (the default) or forwarded as it is.
func (p *Pipeline) checkOutput(ctx context.Context, c *Call, res Result) Result {
	v, isError := res.Value, res.IsError
	if res.Encoded != nil {
		var ok bool
		if v, isError, ok = invokewire.ResponseResult(res.Encoded); !ok {
			return res // the face's own decode reports it
		}
	}
	if isError {
		return res
	}
	var problem string
	if obj := v.GetStructValue(); obj == nil {
		problem = "the result is not an object"
	} else if err := c.Entry.Output.ValidateWithin(ctx, obj, nil, p.policyOf(c).Limits.MaxValidationSteps); err != nil {
		problem = err.Error()
		if ve := (*schema.ValidationError)(nil); errors.As(err, &ve) {
			problem = ve.Problems() // not "invalid arguments for tool …": this is a result
		}
	}
	if problem == "" {
		return res
	}
	c.outputInvalid = true
	p.cfg.Log.WarnContext(ctx, "tool result fails its output schema", "tool", c.Tool, "problem", policy.BoundTo(problem, 512), "on_invalid_output", c.Entry.Tool.OnInvalidOutput)
	if c.Entry.Tool.OnInvalidOutput == registry.OnInvalidOutputPass {
		return res
	}
	return Result{IsError: true, Value: structpb.NewStringValue(fmt.Sprintf("tool %q returned a result that does not match its output schema: %s", c.Tool, problem))}
}

// guardResultSize answers a result over the tool's max_result_bytes with a
// tool error the model can read, naming the limit — not the result, and not
// a transport error. The bytes as received are measured when the backend's
// answer is still encoded (a plain InvokeResponse: its result and is_error).
func guardResultSize(c *Call, res Result) Result {
	limit := c.Entry.Tool.ResultLimit()
	n := int64(len(res.Encoded))
	if res.Encoded == nil && res.Value != nil {
		n = int64(proto.Size(res.Value))
	}
	if n <= limit {
		return res
	}
	return Result{IsError: true, Value: structpb.NewStringValue(fmt.Sprintf(
		"tool %q returned %d bytes, over its max_result_bytes limit of %d; ask for less (a narrower query, fewer items)", c.Tool, n, limit))}
}

// fail classifies err and records it as the call's outcome.
func (p *Pipeline) fail(c *Call, err error) *Error { return c.Fail(err) }

// Finish records the call's outcome, once per call, for every Recorder
// and the audit. err is the error the face saw (nil on success); the one a
// stage recorded wins, since a face may only have a mapped copy of it.
// A non-nil result replaces the call's answer: fail-closed audit could not
// write the line of a call that reached its backend.
func (p *Pipeline) Finish(ctx context.Context, c *Call, err error) *Error {
	if c.start.IsZero() {
		return nil
	}
	e := c.err
	if e == nil && err != nil {
		e = Classify(err)
	}
	o := Outcome{Err: e, Decision: policy.DecisionAllow, Label: registry.LabelUnregistered, Validation: c.validation, BackendCode: c.backend}
	// Only registered names become labels (bounded cardinality). A call
	// refused before the normalize stage set Entry (role, allow-list, rate
	// limit) is still labelled with its tool when that tool is registered.
	if c.Entry != nil {
		o.Label = c.Tool
	} else if _, ok := p.lookup(c); ok && c.Tool != "" {
		o.Label = c.Tool
	}
	if e != nil {
		o.Decision, o.Reason = e.AuditOutcome()
		if e.Kind == KindValidation {
			o.Validation = "failed"
		}
	}
	o.Latency, o.BackendLatency = time.Since(c.start), c.backendTime
	o.OutputInvalid = c.outputInvalid
	for _, r := range p.cfg.Recorders {
		r.RecordCall(ctx, c, o)
	}
	if a := p.cfg.Audit; a != nil {
		return a.finish(ctx, c, o)
	}
	return nil
}

// Visible is THE visibility rule: a caller sees a tool exactly when it
// could invoke it — it holds a role for InvokeTool and the tool passes its
// allow/deny lists. Every listing (ListTools, GetTool, WatchTools, MCP
// tools/list) uses it. A request to a bundle's endpoint (WithBundle) sees
// only the bundle's tools.
func (p *Pipeline) Visible(ctx context.Context, tool string) bool {
	if b := BundleFrom(ctx); b != "" {
		if _, ok := p.lookupIn(b, tool); !ok {
			return false
		}
	}
	return p.Allowed(ctx, tool)
}

// Allowed is Visible without the bundle: whether the caller's roles and
// allow/deny lists admit the name. For names that are not tools but are
// judged by the tools' lists (an upstream's prompts on the MCP face),
// which a bundle narrows by upstream, not by name.
func (p *Pipeline) Allowed(ctx context.Context, tool string) bool {
	pol := PolicyFrom(ctx)
	if pol == nil {
		pol = p.Policy()
	}
	az := pol.Authz
	if az == nil {
		return true
	}
	caller, ok := policy.CallerFrom(ctx)
	return ok && az.AllowMethod(caller, InvokeMethod) == nil && az.ToolAllowed(caller, tool)
}

// registerMethod is RegisterTool's full gRPC method name.
const registerMethod = "/" + policy.RegistryService + "/RegisterTool"

// SeesBackends is who sees a tool's backend target in registry reads
// (GetTool, ListTools, WatchTools): only a caller that may register tools
// (the admin role), who chose the targets anyway. Invokers see an empty
// backend: an address tells a model nothing it needs and an attacker where
// to go around the gateway. Without authorization, everyone.
func (p *Pipeline) SeesBackends(ctx context.Context) bool {
	az := p.policyFor(ctx).Authz
	if az == nil {
		return true
	}
	caller, ok := policy.CallerFrom(ctx)
	return ok && az.AllowMethod(caller, registerMethod) == nil
}

// DropsOptionalNulls reports whether the policy of the request in ctx (or
// the one in force) removes the tool's optional nulls
// (normalize.optional_nulls), for ExportTools.
func (p *Pipeline) DropsOptionalNulls(ctx context.Context, tool string) bool {
	return p.policyFor(ctx).OptionalNulls.Drop(tool)
}

// policyFor is the policy snapshot WithPolicy stored in ctx, else the one
// in force.
func (p *Pipeline) policyFor(ctx context.Context) *Policy {
	if pol := PolicyFrom(ctx); pol != nil {
		return pol
	}
	return p.Policy()
}
