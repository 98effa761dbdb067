package mcpapi

import (
	"context"
	"slices"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// View is how an MCP endpoint offers one caller the catalog. Which tools
// is the pipeline's rule on every view (pipeline.Visible); a view says how
// they are offered. One is chosen per request: the discovery policy
// decides it per caller, and an endpoint serving a selection of tools can
// decide it for everyone it serves.
type View struct {
	// Discovery offers the two meta-tools (discovery.go) in tools/list
	// instead of every visible tool; tools/call still reaches every visible
	// tool by its real name.
	Discovery bool
}

// DiscoveryPolicy says which callers get discovery mode (policy file
// mcp.discovery): everyone (All), a caller named by subject, or one
// holding any of Roles. The zero value: nobody.
type DiscoveryPolicy struct {
	All     bool
	Callers []string
	Roles   []string
}

// covers reports whether c gets discovery mode.
func (d *DiscoveryPolicy) covers(c policy.Caller) bool {
	if d.All || slices.Contains(d.Callers, c.Subject) {
		return true
	}
	for _, r := range d.Roles {
		if c.HasRole(r) {
			return true
		}
	}
	return false
}

// SetDiscovery replaces who gets discovery mode (a policy reload); requests
// from now on are offered their view under it.
func (m *Server) SetDiscovery(d DiscoveryPolicy) {
	m.discovery.Store(&d)
}

// viewFor is the view of the request in ctx: discovery mode on a bundle's
// endpoint whose discovery is search, or for a caller the policy names,
// when the face has a search index to serve it with.
func (m *Server) viewFor(ctx context.Context) View {
	if m.search == nil {
		return View{}
	}
	if name := pipeline.BundleFrom(ctx); name != "" {
		if b, ok := m.reg.Snapshot().Bundle(name); ok && b.Bundle.DiscoveryMode() == registry.DiscoverySearch {
			return View{Discovery: true}
		}
	}
	c, ok := policy.CallerFrom(ctx)
	return View{Discovery: ok && m.discovery.Load().covers(c)}
}
