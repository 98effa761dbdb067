package policy

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"google.golang.org/protobuf/types/known/structpb"
)

// DefaultRuleCostLimit bounds the CEL runtime cost of one rule evaluation, so
// a rule over a large argument cannot stall a call.
const DefaultRuleCostLimit = 1_000_000

// Rule is an argument-value rule: a CEL expression that must evaluate to
// true for the call to proceed.
//
// Variables: args (map: the NORMALIZED arguments), caller (map: subject,
// method, roles) and tool (string). Example:
//
//	!args.command.contains("&&")
//
// A rule that fails to evaluate (for example it reads a key the call did not
// send; guard with has(args.command)) denies the call: rules fail closed.
type Rule struct {
	Name string
	// Tools are path.Match globs selecting the tools the rule applies to; empty means all.
	Tools   []string
	Expr    string
	Message string // shown to the caller on deny; defaults to naming the rule
	// Mode is ModeEnforce ("" too) or ModeShadow: a shadow rule never
	// refuses; EvaluateWithShadow reports what it would have refused.
	Mode string
}

// Rules is a compiled, immutable rule set, safe for concurrent use.
type Rules struct {
	rules     []compiledRule
	hasShadow bool
	fields    argFields     // the union of the rules' fields
	adapter   types.Adapter // the environment's, to convert args once per call
}

type compiledRule struct {
	Rule
	prg    cel.Program
	fields argFields
	// loops is whether the expression has a comprehension: cel-go consults
	// the context only between a comprehension's iterations, so a rule
	// without one evaluates the same without it (and without the
	// context's per-evaluation allocations).
	loops bool
}

// RuleOption configures NewRules.
type RuleOption func(*ruleOptions)

type ruleOptions struct{ costLimit uint64 }

// WithRuleCostLimit sets the CEL cost limit per rule evaluation.
func WithRuleCostLimit(n uint64) RuleOption { return func(o *ruleOptions) { o.costLimit = n } }

// newRuleEnv is the CEL environment rules compile in: their variables
// (ruleVars gives them values).
func newRuleEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
	)
}

// NewRules compiles every rule. A bad expression is a configuration error
// naming the rule.
func NewRules(rules []Rule, opts ...RuleOption) (*Rules, error) {
	o := ruleOptions{costLimit: DefaultRuleCostLimit}
	for _, f := range opts {
		f(&o)
	}
	env, err := newRuleEnv()
	if err != nil {
		return nil, fmt.Errorf("rules: CEL environment: %w", err)
	}
	out := &Rules{adapter: env.CELTypeAdapter()}
	names := map[string]bool{}
	for i, r := range rules {
		if r.Name == "" {
			return nil, fmt.Errorf("rules[%d]: name is empty", i)
		}
		if names[r.Name] {
			return nil, fmt.Errorf("rule %q: duplicate name", r.Name)
		}
		names[r.Name] = true
		if err := checkMode(fmt.Sprintf("rule %q", r.Name), r.Mode); err != nil {
			return nil, err
		}
		out.hasShadow = out.hasShadow || r.Mode == ModeShadow
		for _, p := range r.Tools {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("rule %q: tool pattern %q is not a valid glob: %w", r.Name, p, err)
			}
		}
		ast, iss := env.Compile(r.Expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, iss.Err())
		}
		if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
			return nil, fmt.Errorf("rule %q: expression must be bool, is %s", r.Name, t)
		}
		prg, err := env.Program(ast, cel.CostLimit(o.costLimit), cel.InterruptCheckFrequency(100))
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		f := argFieldsOf(ast.NativeRep())
		out.rules = append(out.rules, compiledRule{Rule: r, prg: prg, fields: f, loops: hasComprehension(ast.NativeRep())})
		out.fields.all = out.fields.all || f.all
		for _, n := range f.names {
			if !slices.Contains(out.fields.names, n) {
				out.fields.names = append(out.fields.names, n)
			}
		}
	}
	return out, nil
}

// Evaluate runs every enforced rule that applies to tool, in order, and
// returns the first refusal. args must be the normalized (and validated)
// arguments. Shadow rules are skipped (EvaluateWithShadow runs them).
func (rs *Rules) Evaluate(ctx context.Context, c Caller, tool string, args *structpb.Struct) error {
	return rs.evaluate(ctx, c, tool, args, nil)
}

// HasShadow reports whether any rule is in shadow mode.
func (rs *Rules) HasShadow() bool { return rs != nil && rs.hasShadow }

// EvaluateWithShadow is Evaluate that also runs the shadow rules, in
// order with the others: the refusals they would have made (up to the
// first enforced refusal) are appended to shadow, never returned.
func (rs *Rules) EvaluateWithShadow(ctx context.Context, c Caller, tool string, args *structpb.Struct, shadow *[]*Error) error {
	if shadow == nil {
		shadow = new([]*Error)
	}
	return rs.evaluate(ctx, c, tool, args, shadow)
}

func (rs *Rules) evaluate(ctx context.Context, c Caller, tool string, args *structpb.Struct, shadow *[]*Error) error {
	if rs == nil || len(rs.rules) == 0 {
		return nil
	}
	if args == nil {
		args = &structpb.Struct{}
	}
	vars := &ruleVars{args: args, tool: tool, c: c, adapter: rs.adapter}
	for i := range rs.rules {
		r := &rs.rules[i]
		if len(r.Tools) > 0 && !matchAny(r.Tools, tool) {
			continue
		}
		if r.Mode == ModeShadow {
			if shadow != nil {
				if e := r.judge(ctx, vars, tool); e != nil {
					*shadow = append(*shadow, e)
				}
			}
			continue
		}
		if e := r.judge(ctx, vars, tool); e != nil {
			return e
		}
	}
	return nil
}

// ruleVars are a call's rule variables (an interpreter.Activation): args,
// tool and caller, the caller's map built only when a rule reads it (most
// rules read args alone). One per evaluation, so the lazy values are not
// shared.
type ruleVars struct {
	args    *structpb.Struct // cel-go adapts *structpb.Struct natively: no JSON round trip
	tool    string
	c       Caller
	caller  map[string]any
	adapter types.Adapter
	// argsVal is args as a CEL value, converted on first read: cel-go
	// converts a native value at every reference, and a rule names args in
	// each member it reads.
	argsVal ref.Val
}

func (v *ruleVars) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		if v.argsVal == nil {
			v.argsVal = v.adapter.NativeToValue(v.args)
		}
		return v.argsVal, true
	case "tool":
		return v.tool, true
	case "caller":
		if v.caller == nil {
			roles := v.c.Roles
			if roles == nil {
				roles = []string{}
			}
			v.caller = map[string]any{"subject": v.c.Subject, "method": v.c.Method, "roles": roles}
		}
		return v.caller, true
	}
	return nil, false
}

func (v *ruleVars) Parent() interpreter.Activation { return nil }

// judge evaluates the rule: nil when it passes, else its refusal.
func (r *compiledRule) judge(ctx context.Context, vars *ruleVars, tool string) *Error {
	var val ref.Val
	var err error
	if r.loops {
		val, _, err = r.prg.ContextEval(ctx, vars)
	} else {
		val, _, err = r.prg.Eval(vars)
	}
	if err != nil {
		// Fail closed. The CEL error is not echoed: it can quote argument data.
		msg := fmt.Sprintf("rule %q could not be evaluated for tool %q, so the call is refused", r.Name, tool)
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("rule %q was interrupted for tool %q, so the call is refused", r.Name, tool)
		}
		return &Error{Code: PermissionDenied, Reason: ReasonRuleError, Rule: r.Name, Tool: tool, Message: msg}
	}
	ok, isBool := val.Value().(bool)
	if !isBool {
		return &Error{Code: PermissionDenied, Reason: ReasonRuleError, Rule: r.Name, Tool: tool,
			Message: fmt.Sprintf("rule %q did not evaluate to a bool for tool %q, so the call is refused", r.Name, tool)}
	}
	if !ok {
		msg := fmt.Sprintf("tool %q: arguments refused by rule %q", tool, r.Name)
		if r.Message != "" {
			msg = fmt.Sprintf("tool %q: %s (rule %q)", tool, r.Message, r.Name)
		}
		return &Error{Code: PermissionDenied, Reason: ReasonRuleDenied, Rule: r.Name, Tool: tool, Message: msg}
	}
	return nil
}
