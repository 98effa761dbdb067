package server

import (
	"slices"

	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/server/mcpfollow"
)

// DefaultMCPRelistInterval is how often the gateway re-lists its upstream
// MCP servers' tools when nothing told it they changed.
const DefaultMCPRelistInterval = mcpfollow.DefaultRelistInterval

// mcpPinPolicy is the policy in force's mcp_upstreams.auto_approve (a
// reload changes it for the next re-list).
func (g *Gateway) mcpPinPolicy() (p mcppin.Policy) {
	g.reload.Do(func(inForce *PolicyConfig) { p.AutoApprove = slices.Clone(inForce.MCPUpstreams.AutoApprove) })
	return p
}

// pendingByUpstream is flowdrop_mcp_pending_changes' reading.
func (g *Gateway) pendingByUpstream() map[string]int { return mcpfollow.PendingByUpstream(g.reg) }
