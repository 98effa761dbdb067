package mcpfollow

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/registry"
)

// The reasons on the audit lines of the follower's own writes.
const (
	// An upstream change held as the tool's pending change.
	reasonUpstreamChanged = "mcp-upstream-changed"
	// The tool's removal upstream held as its pending change.
	reasonUpstreamRemoved = "mcp-upstream-removed"
	// An upstream change (or removal) the policy auto-approved, applied.
	reasonUpstreamAutoApproved = "mcp-upstream-auto-approved"
	// A held change dropped: the upstream lists what is served, or what
	// was last accepted, again.
	reasonUpstreamReverted = "mcp-upstream-reverted"
)

// The operations on the audit lines of held changes (approvals and
// rejections are the admin's, through ToolRegistryService).
const (
	opHoldPendingChange  = "HoldPendingChange"
	opClearPendingChange = "ClearPendingChange"
)

// follow applies one upstream's listing to each tool imported from it,
// through definition pinning (mcppin.Decide): a change is held as the
// tool's pending change, applied only when the policy auto-approves all
// it changes and no admin edited the tool. Every write is conditional on
// the revision the decision was made from.
func (f *Follower) follow(ctx context.Context, g *mcpUpstreamGroup, upstream map[string]*mcp.Tool) {
	var pol mcppin.Policy
	if f.pinPolicy != nil {
		pol = f.pinPolicy()
	}
	for name, t := range g.tools {
		var listed *registry.Definition
		if u, ok := upstream[name]; ok {
			d, err := mcpimport.Definition(u)
			if err == nil {
				_, err = f.reg.CompileOptions().Compile(t.WithDefinition(d)) // as the registry will: its schema bounds too
			}
			if err != nil {
				f.log.Warn("mcp upstream: a changed tool cannot be admitted; keeping the registered revision", "tool", t.Name, "url", g.url, "err", err)
				continue
			}
			listed = &d
		}
		dec := mcppin.Decide(t, listed, pol, time.Now())
		rev := t.Revision
		put := func() (int64, error) {
			res, err := f.reg.Register(ctx, dec.Tool, registry.RegisterOptions{ExpectedRevision: &rev})
			return res.Tool.Revision, err
		}
		kinds := strings.Join(dec.Kinds, ",")
		switch dec.Action {
		case mcppin.Hold:
			reason, what := reasonUpstreamChanged, "change held for approval ("+kinds+"; held: "+dec.HeldBecause+")"
			if listed == nil {
				reason, what = reasonUpstreamRemoved, "removal upstream held for approval (held: "+dec.HeldBecause+")"
			}
			f.write(ctx, opHoldPendingChange, t.Name, g.url, reason, what, put)
		case mcppin.Apply:
			f.write(ctx, "RegisterTool", t.Name, g.url, reasonUpstreamAutoApproved, "updated: the policy auto-approves this change ("+kinds+")", put)
		case mcppin.Resolve:
			f.write(ctx, opClearPendingChange, t.Name, g.url, reasonUpstreamReverted, "pending change dropped: the upstream lists the accepted definition again", put)
		case mcppin.Delete:
			f.write(ctx, "DeleteTool", t.Name, g.url, reasonUpstreamAutoApproved, "removed: the upstream no longer has it and the policy auto-approves removals", func() (int64, error) {
				return 0, f.reg.Delete(ctx, t.Name, &rev)
			})
		}
	}
}

// PendingByUpstream counts the imported tools with a held change, by
// upstream (flowdrop_mcp_pending_changes; 0 for an upstream tools are
// imported from and nothing is held): the URL without user info, query or
// fragment, which may carry what belongs on no dashboard.
func PendingByUpstream(reg *registry.Registry) map[string]int {
	out := map[string]int{}
	for _, e := range reg.Snapshot().List() {
		t := e.Tool
		if t.Origin == nil {
			continue
		}
		label := upstreamLabel(t.Origin.MCPUpstream)
		n := out[label]
		if t.Pending != nil {
			n++
		}
		out[label] = n
	}
	return out
}

func upstreamLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "unparsable"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}
