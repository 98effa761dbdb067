package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
)

// resolveAlias is the alias stage: a call to an alias (registry.Alias)
// becomes a call to its target. The model's arguments were normalized and
// validated against the alias's own schema (what the model sees); here
// the arguments the gateway sets are added — fixed values, and values
// from the caller's identity — and the whole is validated against the
// target's schema, so an alias can never send its target what the
// target's own schema refuses (a target narrowed after the alias was
// registered included). The call keeps the alias as its Tool (allow
// lists, rate limits, metrics and the audit line name what was called);
// its Entry becomes the target's, which the backends dispatch by, and
// AliasTarget names it for the audit line.
func (p *Pipeline) resolveAlias(ctx context.Context, c *Call) error {
	a := c.Entry.Tool.AliasOf()
	if a == nil {
		return nil
	}
	target, ok := p.cfg.Registry.Lookup(a.Target)
	if !ok || target.Tool.AliasOf() != nil {
		// The target was deleted (or replaced by an alias) after the alias
		// was registered: an admin must act. Its name is not the caller's.
		return &Error{Code: FailedPrecondition, Kind: KindFailure, Reason: ReasonAliasTargetMissing, Tool: c.Tool,
			Message: fmt.Sprintf("tool %q is not available: the tool it offers is not registered", c.Tool)}
	}
	args, err := c.Args()
	if err != nil {
		return err
	}
	set := a.GatewaySet()
	merged := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(args.GetFields())+len(set))}
	for k, v := range args.GetFields() {
		merged.Fields[k] = v
	}
	for _, k := range set {
		if _, sent := merged.Fields[k]; sent {
			return &Error{Code: InvalidArgument, Kind: KindPolicy, Reason: ReasonAliasArgumentSet, Tool: c.Tool,
				Message: fmt.Sprintf("argument %q is set by the gateway for tool %q; leave it out", policy.Bound(k), c.Tool)}
		}
		v, err := p.aliasValue(c, a, k)
		if err != nil {
			return err
		}
		merged.Fields[k] = v
	}
	if err := target.ValidateWithin(ctx, merged, nil, p.policyOf(c).Limits.MaxValidationSteps); err != nil {
		return p.aliasInvalid(c, err)
	}
	c.Alias, c.Entry = c.Entry, target
	c.args.replaced(merged)
	return nil
}

// aliasValue is the value the gateway sets for property k: the fixed one,
// or the caller's identity's. A caller without the source is refused:
// the call never goes without the argument, nor with an empty one.
func (p *Pipeline) aliasValue(c *Call, a *registry.Alias, k string) (*structpb.Value, error) {
	if v, ok := a.Fixed[k]; ok {
		sv, err := structpb.NewValue(v)
		if err != nil {
			return nil, fmt.Errorf("tool %q: fixed argument %q: %w", c.Tool, k, err) // Internal: admitted values are JSON
		}
		return sv, nil
	}
	src := a.Injected[k]
	var (
		val string
		ok  bool
	)
	switch {
	case src == registry.InjectSubject:
		val, ok = c.Caller.Subject, c.HasCaller && c.Caller.Subject != ""
	case src == registry.InjectAuthMethod:
		val, ok = c.Caller.Method, c.HasCaller && c.Caller.Method != ""
	case strings.HasPrefix(src, registry.InjectClaimPrefix):
		if c.HasCaller {
			val, ok = c.Caller.Token.Claim(src[len(registry.InjectClaimPrefix):])
		}
	}
	if !ok || val == "" {
		return nil, &Error{Code: PermissionDenied, Kind: KindPolicy, Reason: ReasonAliasIdentity, Tool: c.Tool,
			Message: fmt.Sprintf("tool %q needs the caller's %s, which this caller's credentials do not carry", c.Tool, src)}
	}
	return structpb.NewStringValue(val), nil
}

// aliasInvalid is the refusal of arguments that, with those the gateway
// sets, fail the target's schema. It names the pointers, not the values
// (a value may be one the gateway set from the caller's identity), nor
// the target.
func (p *Pipeline) aliasInvalid(c *Call, err error) error {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return p.validationBudget(c, err)
	}
	var where []string
	for _, v := range ve.Violations {
		where = append(where, pointerOrRoot(v.Pointer))
	}
	return &Error{Code: InvalidArgument, Kind: KindPolicy, Reason: ReasonAliasArgumentsInvalid, Tool: c.Tool,
		Message: fmt.Sprintf("tool %q: the arguments, with those the gateway sets, do not satisfy the tool it offers (at %s)", c.Tool, strings.Join(where, ", "))}
}

// resolveExportName makes a call naming a tool by its provider-safe
// export name (registry/exportname.go: what `tools export` hands model
// APIs, e.g. notes_v1_Notes_Create) a call to that tool, before anything
// is keyed by the name: allow lists, rate limits, rules, metrics and the
// audit line all see the tool's registered name. A registered name always
// wins. The received message, which heads a forwarded backend request,
// names the tool as called, so it is not forwarded.
func (p *Pipeline) resolveExportName(c *Call) {
	if _, ok := p.cfg.Registry.Lookup(c.Tool); ok {
		return
	}
	r, ok := p.cfg.Registry.(resolver)
	if !ok {
		return
	}
	if e, ok := r.Resolve(c.Tool); ok && e.Tool.Name != c.Tool {
		c.Tool = e.Tool.Name
		c.args.wire.Message = nil
	}
}
