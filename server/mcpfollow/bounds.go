package mcpfollow

import (
	"context"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// reasonUpstreamOversized is the audit reason of an upstream tool left
// at its registered revision because its listing is over a bound.
const reasonUpstreamOversized = "mcp-upstream-oversized"

// oversizedKey is one report of an oversized upstream tool: reported once
// until the upstream lists it differently (another size, or within the
// bounds), so a tool that stays over a bound is not a line per re-list.
type oversizedKey struct {
	url, tool, bound string
	size             int
}

// skipOversized reports the followed tools of g its listing left out for
// being over a bound — a WARN line, the metric and an audit line, once
// per size — and returns their upstream names: they keep their registered
// revision (an upstream is not trusted to be small, and a tool over a
// bound is never stored). Upstream tools g does not follow are not
// reported: nothing of them would be stored anyway.
func (f *Follower) skipOversized(ctx context.Context, g *mcpUpstreamGroup, oversized []mcpimport.Oversized) map[string]bool {
	skip := map[string]bool{}
	f.mu.Lock()
	if f.oversized == nil {
		f.oversized = map[oversizedKey]bool{}
	}
	now := map[oversizedKey]bool{}
	var fresh []mcpimport.Oversized
	for _, o := range oversized {
		if _, followed := g.tools[o.Tool]; !followed {
			continue
		}
		skip[o.Tool] = true
		k := oversizedKey{g.url, o.Tool, o.Bound, o.Size}
		now[k] = true
		if !f.oversized[k] {
			fresh = append(fresh, o)
		}
	}
	for k := range f.oversized {
		if _, followed := g.tools[k.tool]; k.url == g.url && followed && !now[k] {
			delete(f.oversized, k)
		}
	}
	for k := range now {
		f.oversized[k] = true
	}
	f.mu.Unlock()
	for _, o := range fresh {
		t := g.tools[o.Tool]
		f.log.Warn("mcp upstream: a tool's listing is over a bound; keeping its registered revision",
			"tool", t.Name, "upstream_tool", o.Tool, "url", g.url, "bound", o.Bound, "bytes", o.Size, "limit", o.Limit)
		if f.countOversized != nil {
			f.countOversized(o.Bound)
		}
		w := pipeline.RegistryWrite{Start: time.Now(), Caller: followerCaller, HasCaller: true, Operation: "RegisterTool", Tool: t.Name,
			Revision: t.Revision, Decision: policy.DecisionError, Reason: reasonUpstreamOversized}
		if err := f.audit.RecordRegistryWrite(ctx, w); err != nil {
			f.log.Error("mcp upstream: an oversized tool's audit line could not be written", "tool", t.Name, "url", g.url)
		}
	}
	return skip
}

// withoutHeld is g less the tools held at their registered revision (not
// followed this time: neither changed nor taken as gone).
func withoutHeld(g *mcpUpstreamGroup, held map[string]bool) *mcpUpstreamGroup {
	if len(held) == 0 {
		return g
	}
	out := *g
	out.tools = map[string]registry.Tool{}
	for name, t := range g.tools {
		if !held[name] {
			out.tools[name] = t
		}
	}
	return &out
}
