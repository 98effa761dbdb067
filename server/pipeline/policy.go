package pipeline

import (
	"context"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
)

// Policy is one immutable snapshot of the policy objects a call consults:
// the faces authenticate with its Auth, the stages read the rest. A call
// takes the snapshot once, when it begins (Pipeline.Begin), and keeps it to
// its end, so a reload (SetPolicy) never changes the policy of a call in
// flight. Nil fields turn their check off, as in Config.
type Policy struct {
	// Auth authenticates callers on every face.
	Auth *policy.Authenticator
	// Authz, RateLimit, Limits, Rules, InFlight, ForwardEntityBound and
	// OptionalNulls are as in Config.
	Authz              *policy.Authorizer
	RateLimit          *policy.RateLimiter
	Limits             policy.Limits
	Rules              *policy.Rules
	InFlight           *policy.InFlight
	ForwardEntityBound bool
	OptionalNulls      *policy.OptionalNulls
	// RegistryRate limits the registry service's calls (caller × method).
	RegistryRate *policy.RateLimiter

	// repairLimits is Limits as normalize bounds a repair.
	repairLimits normalize.Limits
	// shadowLimits are the configured argument limits when limits.mode is
	// shadow (Limits are then the defaults); nil otherwise.
	shadowLimits *policy.Limits
}

// SetPolicy makes pol the policy of every call that begins from now on;
// calls in flight finish under the one they began with. The argument
// limits' defaults are filled in (they are always on).
func (p *Pipeline) SetPolicy(pol Policy) {
	if pol.Limits.Mode == policy.ModeShadow {
		watched := pol.Limits.WithDefaults()
		pol.shadowLimits = &watched
		pol.Limits = policy.Limits{MaxInFlightPerTool: watched.MaxInFlightPerTool,
			MaxValidationSteps: watched.MaxValidationSteps, MaxSchemaEvaluations: watched.MaxSchemaEvaluations}
	}
	pol.Limits = pol.Limits.WithDefaults()
	pol.repairLimits = repairLimitsOf(pol.Limits)
	p.pol.Store(&pol)
}

// repairLimitsOf is l as normalize bounds what a parse builds.
func repairLimitsOf(l policy.Limits) normalize.Limits {
	return normalize.Limits{MaxBytes: l.MaxArgumentBytes, MaxStringLength: l.MaxStringLength,
		MaxDepth: l.MaxDepth, MaxElements: l.MaxListElements, MaxKeys: l.MaxObjectKeys}
}

// Policy returns the policy in force now (calls that begin now get it).
func (p *Pipeline) Policy() *Policy { return p.pol.Load() }

// UsePolicy makes pol the call's policy instead of the one in force when it
// begins: for a face that authenticated the caller under pol (MCP reads the
// HTTP request's credentials before the call exists).
func (c *Call) UsePolicy(pol *Policy) { c.pol = pol }

// Policy is the call's policy snapshot (nil before Begin).
func (c *Call) Policy() *Policy { return c.pol }

type policyKey struct{}

// WithPolicy stores pol in ctx, for a face that authenticates a request
// under pol and runs its calls later (MCP).
func WithPolicy(ctx context.Context, pol *Policy) context.Context {
	return context.WithValue(ctx, policyKey{}, pol)
}

// PolicyFrom returns the snapshot WithPolicy stored, or nil.
func PolicyFrom(ctx context.Context) *Policy {
	pol, _ := ctx.Value(policyKey{}).(*Policy)
	return pol
}
