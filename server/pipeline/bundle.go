package pipeline

import (
	"context"

	"github.com/flowdrop/gateway/registry"
)

// A call made through a bundle's endpoint (registry.Bundle) sees only the
// bundle's tools: a tool outside it is not found, exactly as a name that is
// not registered (the same reason, audit line and metrics label), and
// listings leave it out. Per-caller visibility applies on top.

// BundleLookup is a Lookup that also answers within a bundle
// (registry.Registry, registry.Snapshot).
type BundleLookup interface {
	LookupIn(bundle, name string) (*registry.Entry, bool)
}

type bundleKey struct{}

// WithBundle marks ctx as a request to the named bundle's endpoint:
// Visible then leaves out the tools outside it.
func WithBundle(ctx context.Context, bundle string) context.Context {
	return context.WithValue(ctx, bundleKey{}, bundle)
}

// BundleFrom is the bundle WithBundle stored, or "".
func BundleFrom(ctx context.Context) string {
	b, _ := ctx.Value(bundleKey{}).(string)
	return b
}

// lookup is the call's tool as the call may see it: within its bundle
// when it has one.
func (p *Pipeline) lookup(c *Call) (*registry.Entry, bool) {
	return p.lookupIn(c.Bundle, c.Tool)
}

// lookupIn is the tool's entry within bundle ("": the whole registry). A
// registry that cannot answer for a bundle finds nothing in one (fail
// closed).
func (p *Pipeline) lookupIn(bundle, name string) (*registry.Entry, bool) {
	if bundle == "" {
		return p.cfg.Registry.Lookup(name)
	}
	bl, ok := p.cfg.Registry.(BundleLookup)
	if !ok {
		return nil, false
	}
	return bl.LookupIn(bundle, name)
}
