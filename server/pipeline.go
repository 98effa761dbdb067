package server

import (
	"context"
	"sync/atomic"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
)

// toolLookup is what the pipeline needs from the registry: a lock-free
// lookup of a tool's compiled entry.
type toolLookup interface {
	Lookup(name string) (*registry.Entry, bool)
}

// pipeline is the InvokeTool processing, independent of the transport. Each
// stage is a plain method returning a domain error (see errors.go); the gRPC
// interceptors and handler are thin adapters over them, and invoke runs them
// in order for transports without an interceptor chain (MCP tools/call).
//
// Order: [admit: role, rate limit] → screen (tool allow/deny, raw-argument
// limits) → normalize → validate → policyCheck (limits on the normalized
// arguments, CEL rules) → dispatch (in-flight limit, forward); finish writes
// the audit line and metrics for every outcome. chain.go runs the same
// stages in the same order (policy.go holds the policy ones).
type pipeline struct {
	reg            toolLookup
	pool           *backendPool
	defaultTimeout time.Duration

	policyState // zero (unit tests): every policy check is off
}

// testHookNormalize, when set by a test (export_test.go), runs inside the
// normalize stage so a test can make the gateway's own pipeline panic.
// Atomic because tests set it while servers run.
var testHookNormalize atomic.Pointer[func(tool string)]

// normalize looks up the tool and applies its RT-TOOL-8 plan: c.args becomes
// the normalized arguments and c.report what was repaired or skipped.
func (p *pipeline) normalize(_ context.Context, c *call) error {
	e, ok := p.reg.Lookup(c.tool)
	if !ok {
		return &toolNotFoundError{tool: c.tool}
	}
	c.entry = e
	if h := testHookNormalize.Load(); h != nil {
		(*h)(c.tool)
	}
	// Apply never mutates the model's arguments (they stay available, e.g. for
	// audit) and returns them as-is, allocation-free, when nothing changed.
	c.args, c.report = e.Plan.Apply(c.args)
	return nil
}

// validate checks the normalized arguments against the tool's full schema.
func (p *pipeline) validate(_ context.Context, c *call) error {
	if v := c.entry.Validate(c.args, &c.report); v != nil {
		return v // *registry.ValidationError, carrying the repairs
	}
	c.pol.validation = "ok"
	return nil
}

// invoke runs every stage in order; it is the entry point for transports
// without a gRPC interceptor chain. The transport has authenticated the
// caller (policy.WithCaller on ctx, see authenticateHTTP); invoke checks
// its role and rate limit like the gRPC interceptors do, and writes the
// audit line. The report is returned even on error.
func (p *pipeline) invoke(ctx context.Context, c *call) (resp *gatewayv1.InvokeResponse, _ normalize.Report, err error) {
	beginCall(c)
	defer func() { p.finish(ctx, c, err) }()
	for _, stage := range []func(context.Context, *call) error{p.admit, p.screen, p.normalize, p.validate, p.policyCheck} {
		if err = stage(ctx, c); err != nil {
			return nil, c.report, err
		}
	}
	resp, err = p.dispatch(ctx, c)
	return resp, c.report, err
}
