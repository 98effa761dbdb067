package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/structwire"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
)

// Stage is one step of a tool call: it reads and fills the Call, and
// refuses the call by returning an error (any error; Classify makes it an
// *Error).
type Stage struct {
	Name string
	Run  func(context.Context, *Call) error
}

// stages is THE ordered list of a tool call's stages. Both faces run
// exactly this list: the gRPC face as one interceptor per stage (one
// generic adapter), the MCP face through Invoke. Adding a stage means
// adding a line here; a stage that needs the decoded arguments asks the
// Call (Args), so nothing else has to know.
//
// Normalization runs before any argument-value policy, so a rule judges
// what the tool will receive; the tool allow/deny lists and the size limits
// on the arguments as sent run before it, to bound its work and to tell a
// denied caller nothing about the tool.
func (p *Pipeline) stageList() []Stage {
	return []Stage{
		{"caller", p.identify},              // the face's authenticated caller, or Unauthenticated
		{"audit", p.auditWritable},          // fail-closed audit can write, or Unavailable
		{"role", p.checkRole},               // the caller holds a role for InvokeTool
		{"identifiers", p.checkIdentifiers}, // tool name (registry.NamePattern), call id, idempotency key
		{"rate-limit", p.rateLimit},         // caller × tool token bucket
		{"screen", p.screen},                // tool allow/deny; size limits on the arguments as sent
		{"normalize", p.normalize},          // RT-TOOL-8 against the tool's schema
		{"validate", p.validate},            // the tool's full schema
		{"alias", p.resolveAlias},           // an alias's own arguments added, validated against its target
		{"rules", p.rules},                  // size limits again on the normalized arguments; CEL rules
	}
}

// StageNames lists the stages in order, then "dispatch" (in-flight limit,
// backend), which always ends a call that passed them.
func (p *Pipeline) StageNames() []string {
	names := make([]string, 0, len(p.stages)+1)
	for _, s := range p.stages {
		names = append(names, s.Name)
	}
	return append(names, "dispatch")
}

// InvokeMethod is InvokeTool's full gRPC method name: the role table
// decides who may invoke tools on every face by this name.
const InvokeMethod = "/" + policy.GatewayService + "/InvokeTool"

// identify takes the caller the face authenticated (policy.WithCaller on
// ctx). Without one, the call is refused when the pipeline requires
// authentication (always, in the gateway) and anonymous otherwise.
func (p *Pipeline) identify(ctx context.Context, c *Call) error {
	if caller, ok := policy.CallerFrom(ctx); ok {
		c.Caller, c.HasCaller = caller, true
		return nil
	}
	if p.cfg.RequireCaller {
		return unauthenticated()
	}
	c.Caller = policy.Caller{Subject: "anonymous", Method: policy.MethodNone}
	return nil
}

// auditWritable refuses every call while fail-closed audit cannot write
// (an atomic load; nothing else on the clean path).
func (p *Pipeline) auditWritable(_ context.Context, c *Call) error {
	if !p.cfg.Audit.Writable() {
		return auditUnavailable(c.Tool)
	}
	return nil
}

func (p *Pipeline) checkRole(_ context.Context, c *Call) error {
	az := p.policyOf(c).Authz
	if az == nil {
		return nil
	}
	return az.AllowMethod(c.Caller, InvokeMethod)
}

// checkName refuses a tool name no tool can have, before anything is keyed
// by it (rate-limit buckets, in-flight counters, metric labels) or looks
// it up; messages and logs quote only a bounded prefix of it.
func (p *Pipeline) checkIdentifiers(_ context.Context, c *Call) error {
	if !registry.ValidName(c.Tool) {
		return ToolNameInvalid(c.Tool)
	}
	p.resolveExportName(c)
	if !validCallID(c.CallID) {
		return CallIDInvalid(c.CallID)
	}
	if c.IdempotencyKey != "" || c.keyConflict {
		return checkIdempotencyKey(c)
	}
	return nil
}

// MaxCallIDBytes bounds a call id: room for any UUID, ULID or model
// provider's tool-call id, far below a backend's header limits.
const MaxCallIDBytes = 256

// validCallID: at most MaxCallIDBytes of printable ASCII (empty is fine).
// The id travels to the backend as gRPC metadata (x-flowdrop-call-id),
// where a control or non-ASCII byte would fail the backend call.
func validCallID(id string) bool {
	if len(id) > MaxCallIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// rateLimit takes a token from the caller's bucket for the tool when the
// tool is offered to the caller (registered, and passing its allow/deny
// lists); every other name shares the caller's one bucket for tools it is
// not offered. So buckets exist only for registered tools (a model
// inventing names cannot grow the limiter), and a denied caller sees the
// same thing for a registered tool it may not call as for a name that does
// not exist: a bucket per registered-but-denied tool would tell them apart
// (exhaust the shared bucket, then see which names still pass).
func (p *Pipeline) rateLimit(ctx context.Context, c *Call) error {
	pol := p.policyOf(c)
	rl := pol.RateLimit
	if !rl.On() {
		return nil
	}
	var err error
	if _, ok := p.lookup(c); ok && (pol.Authz == nil || pol.Authz.AllowTool(c.Caller, c.Tool) == nil) {
		err = rl.Allow(ctx, c.Caller, c.Tool)
	} else {
		err = rl.AllowUnoffered(ctx, c.Caller, c.Tool)
	}
	if err != nil && rl.Shadow() {
		c.addShadow(err)
		return nil
	}
	return err
}

// screen: the tool allow/deny lists (deny early: cheaper, and a denied
// caller learns nothing about the tool, not even whether it exists) and
// the argument limits on the arguments as sent. Received bytes are scanned
// on the wire (policy.Limits.CheckWire), so arguments over a limit are
// refused before anything decodes them; bytes holding more than their
// decoded form are decoded here, dropping the rest, and never forwarded
// as they came.
func (p *Pipeline) screen(_ context.Context, c *Call) error {
	pol := p.policyOf(c)
	if az := pol.Authz; az != nil {
		if err := az.AllowTool(c.Caller, c.Tool); err != nil {
			return err
		}
		if az.HasShadow() {
			if e := az.ShadowTool(c.Caller, c.Tool); e != nil {
				c.shadow = append(c.shadow, e)
			}
		}
	}
	if b, ok := c.args.Undecoded(); ok {
		canonical, err := pol.Limits.CheckWire(c.Tool, b)
		if err != nil {
			return err
		}
		if !canonical {
			c.args.reencoded()
			if _, err := c.Args(); err != nil {
				return err
			}
			// Unknown fields are gone; a kind-less Value (only unknown
			// fields) is refused by the decoded check.
			return p.checkLimits(c)
		}
		return nil
	}
	return p.checkLimits(c)
}

// checkLimits applies the argument limits to the call's arguments: on the
// wire while they are bytes this gateway encoded (repaired on the wire,
// so canonical), else decoded.
func (p *Pipeline) checkLimits(c *Call) error {
	if b, ok := c.args.RepairedWire(); ok {
		_, err := p.policyOf(c).Limits.CheckWire(c.Tool, b)
		return err
	}
	args, err := c.Args()
	if err != nil {
		return err
	}
	return p.policyOf(c).Limits.Check(c.Tool, args)
}

// normalize looks the tool up and applies its RT-TOOL-8 plan, then, where
// the policy asks, drops optional nulls (an extension outside RT-TOOL-8).
func (p *Pipeline) normalize(_ context.Context, c *Call) error {
	e, ok := p.lookup(c)
	if !ok {
		return ToolNotFound(c.Tool)
	}
	c.Entry = e
	if err := p.applyPlan(c); err != nil {
		return err
	}
	return p.dropOptionalNulls(c)
}

// applyPlan applies the tool's RT-TOOL-8 plan. Arguments still as received
// bytes stay so, undecoded, when the wire check finds nothing to repair.
func (p *Pipeline) applyPlan(c *Call) error {
	e := c.Entry
	if b, ok := c.args.WireChecked(); ok {
		if !e.Plan.NeedsRepairWire(b) {
			return nil
		}
		// Only the members needing repair are decoded and encoded again;
		// the arguments stay bytes for the stages after this one.
		// They are written straight into the backend request.
		head := invokewire.BeginRequest(c.Tool, len(b), c.CallID)
		out, rep, taken, err := e.Plan.ApplyWireWithin(head, b, p.policyOf(c).repairLimits)
		if taken {
			c.Report = rep
			if err != nil {
				return p.repairRefusal(c, err)
			}
			if out != nil {
				c.args.repairedOnWire(out, len(head), c.CallID)
			}
			return p.checkEntityBound(c)
		}
	}
	args, err := c.Args()
	if err != nil {
		return err
	}
	// ApplyWithin never mutates the model's arguments (they stay available
	// for audit) and returns them as they are, allocation-free, when nothing
	// changed. The limits stop a JSON-string repair while it parses.
	out, rep, err := e.Plan.ApplyWithin(args, p.policyOf(c).repairLimits)
	if err != nil {
		c.Report = rep
		return p.repairRefusal(c, err)
	}
	c.args.normalized(out)
	c.Report = rep
	return p.checkEntityBound(c)
}

// dropOptionalNulls removes the nulls sent for optional properties whose
// schema does not admit null (registry/schema's DropOptionalNulls: what
// OpenAI strict mode sends for "not given"), for the tools the policy's
// normalize.optional_nulls drops them for, and reports each as a
// null-dropped repair. It runs after RT-TOOL-8, whose output it never
// changes otherwise, so nulls inside a just-decoded JSON string count too.
// Off (the default) it is one nil check; on, arguments still as bytes are
// decoded only when they hold a null.
func (p *Pipeline) dropOptionalNulls(c *Call) error {
	if !p.policyOf(c).OptionalNulls.Drop(c.Tool) {
		return nil
	}
	if b, ok := c.args.Undecoded(); ok && !structwire.HasNull(b) {
		return nil
	}
	args, err := c.Args()
	if err != nil {
		return err
	}
	out, dropped := c.Entry.Schema.DropOptionalNulls(args)
	if len(dropped) == 0 {
		return nil
	}
	c.Report.Repairs = append(c.Report.Repairs, dropped...)
	c.args.replaced(out)
	return nil
}

// checkEntityBound refuses an argument entity decoding left escaped at its
// bound, unless the policy forwards such arguments.
func (p *Pipeline) checkEntityBound(c *Call) error {
	if !p.policyOf(c).ForwardEntityBound {
		return refuseEntityBound(c)
	}
	return nil
}

// refuseEntityBound refuses a call whose argument was still changing when
// entity decoding stopped at its bound: RT-TOOL-8 lets normalization stop
// there, but the value is still escaped, so a rule such as
// !args.command.contains("&&") would judge "&amp;&amp;" and pass what the
// tool may decode to "&&".
func refuseEntityBound(c *Call) error {
	for _, r := range c.Report.Repairs {
		if r.BoundHit {
			return &Error{Code: InvalidArgument, Kind: KindPolicy, Reason: ReasonEntityBound, Tool: c.Tool,
				Limit: "max_entity_passes", Repairs: c.Report.Repairs,
				Message: fmt.Sprintf("argument %s is still HTML-escaped after %d entity-decoding passes (the bound): refused, since policy could not judge its decoded value",
					pointerOrRoot(r.Path), r.Passes)}
		}
	}
	return nil
}

// pointerOrRoot is a JSON Pointer for a message ("" is the root).
func pointerOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// validate checks the normalized arguments against the tool's full schema;
// undecoded arguments the wire validator proves valid are not decoded. The
// work is bounded by the policy's max_validation_steps (arguments whose
// worst case is over it are refused before anything is evaluated) and by
// the call's context, so a call whose deadline passes, or a gateway
// shutting down, does not wait on an evaluation.
func (p *Pipeline) validate(ctx context.Context, c *Call) error {
	steps := p.policyOf(c).Limits.MaxValidationSteps
	if b, ok := c.args.WireChecked(); ok && c.Entry.FastValidWireWithin(ctx, b, steps) {
		c.validation = "ok"
		return nil
	}
	args, err := c.Args()
	if err != nil {
		return err
	}
	if v := c.Entry.ValidateWithin(ctx, args, &c.Report, steps); v != nil {
		return p.validationBudget(c, v)
	}
	c.validation = "ok"
	return nil
}

// validationBudget is err, or for a *schema.BudgetError the policy's
// refusal naming max_validation_steps and where the worst case crossed it.
func (p *Pipeline) validationBudget(c *Call, err error) error {
	var be *schema.BudgetError
	if !errors.As(err, &be) {
		return err
	}
	return p.policyOf(c).Limits.Exceeded(c.Tool, policy.LimitMaxValidationSteps, be.Pointer, false)
}

// rules: the limits again on the normalized arguments (JSON decoding can
// grow and deepen them; unchanged arguments were checked by screen) and the
// CEL rules, which so judge the decoded form the tool will receive.
func (p *Pipeline) rules(ctx context.Context, c *Call) error {
	if c.args.Rescreen() {
		if err := p.checkLimits(c); err != nil {
			return err
		}
	}
	if watched := p.policyOf(c).shadowLimits; watched != nil {
		args, err := c.Args()
		if err != nil {
			return err
		}
		if err := watched.Check(c.Tool, args); err != nil {
			c.addShadow(err)
		}
	}
	rules := p.policyOf(c).Rules
	if err := p.rulesFor(ctx, c, rules, c.Tool); err != nil {
		return err
	}
	// An alias does not take its target out of the target's rules.
	if t := c.AliasTarget(); t != "" {
		return p.rulesFor(ctx, c, rules, t)
	}
	return nil
}

// rulesFor evaluates the CEL rules that apply to tool on c's arguments.
func (p *Pipeline) rulesFor(ctx context.Context, c *Call, rules *policy.Rules, tool string) error {
	if !rules.AppliesTo(tool) {
		return nil
	}
	args, err := p.ruleArgs(c, rules)
	if err != nil {
		return err
	}
	if rules.HasShadow() {
		return rules.EvaluateWithShadow(ctx, c.Caller, tool, args, &c.shadow)
	}
	return rules.Evaluate(ctx, c.Caller, tool, args)
}

// repairLimitNames are the policy limits behind normalize's limits.
var repairLimitNames = map[normalize.LimitKind]string{
	normalize.LimitBytes:        policy.LimitMaxArgumentBytes,
	normalize.LimitStringLength: policy.LimitMaxStringLength,
	normalize.LimitDepth:        policy.LimitMaxDepth,
	normalize.LimitElements:     policy.LimitMaxListElements,
	normalize.LimitKeys:         policy.LimitMaxObjectKeys,
}

// repairRefusal is the refusal of a repair a limit stopped: the policy's
// limit refusal, naming the limit and the path.
func (p *Pipeline) repairRefusal(c *Call, err error) error {
	var le *normalize.LimitError
	if !errors.As(err, &le) {
		return err
	}
	return p.policyOf(c).Limits.Exceeded(c.Tool, repairLimitNames[le.Kind], le.Path, true)
}
