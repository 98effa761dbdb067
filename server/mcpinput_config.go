package server

import (
	"maps"
	"slices"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/pipeline"
)

// MCPInputConfig is how upstream MCP servers' requests for their callers'
// input (elicitation, sampling, roots) are relayed: the policy file's
// mcp_upstreams.input.
type MCPInputConfig struct {
	// KeyFiles seal the state a multi round-trip call's caller carries
	// between rounds (mcpapi/input.go): each a base64 AES-256 key; the
	// first seals, every one opens, so a new key goes first and the old
	// one stays listed for a round's lifetime (rotation overlap). None: a
	// random key per process, so only the replica that asked continues a
	// round. Every replica of a fleet lists the same files.
	KeyFiles []string
	// Keys is KeyFiles loaded (validate loads them).
	Keys *sealedstate.Keyring
	// StateTTL is how long a round's state is good for: the caller's time
	// to answer (0: pipeline.InputDefaultStateTTL).
	StateTTL time.Duration
	// Forbid are, by upstream URL (as tools name it: https://…, or
	// stdio://NAME), the kinds of input (elicitation, sampling, roots) it
	// may not ask a caller for.
	Forbid map[string][]string
}

// maxInputStateTTL bounds a round's lifetime.
const maxInputStateTTL = 24 * time.Hour

var inputKinds = []string{pipeline.InputElicitation, pipeline.InputSampling, pipeline.InputRoots}

// validate checks the section and loads its keys; bad reports each fault.
func (c *MCPInputConfig) validate(bad func(format string, a ...any)) {
	if d := c.StateTTL; d != 0 && (d < time.Second || d > maxInputStateTTL) {
		bad("mcp_upstreams.input.state_ttl %v: must be between 1s and %v (or unset: %v)", d, maxInputStateTTL, pipeline.InputDefaultStateTTL)
	}
	for _, url := range slices.Sorted(maps.Keys(c.Forbid)) {
		if url == "" {
			bad("mcp_upstreams.input.forbid: an upstream URL is empty")
		}
		for _, k := range c.Forbid[url] {
			if !slices.Contains(inputKinds, k) {
				bad("mcp_upstreams.input.forbid[%q]: %q is not one of %v", policy.Bound(url), policy.Bound(k), inputKinds)
			}
		}
	}
	if len(c.KeyFiles) > 0 && c.Keys == nil {
		k, err := sealedstate.Load(c.KeyFiles...)
		if err != nil {
			bad("mcp_upstreams.input.key_files: %v", err)
			return
		}
		c.Keys = k
	}
}

// mcpInputState is the MCP face's sealing now: the policy in force's.
func (g *Gateway) mcpInputState() (st mcpapi.InputState) {
	g.reload.Do(func(inForce *PolicyConfig) {
		st = mcpapi.InputState{Keys: inForce.MCPUpstreams.Input.Keys, TTL: inForce.MCPUpstreams.Input.StateTTL}
	})
	return st
}

// mcpInputForbidden is the backend's check of what an upstream may ask.
func (g *Gateway) mcpInputForbidden(url string) (kinds []string) {
	g.reload.Do(func(inForce *PolicyConfig) { kinds = inForce.MCPUpstreams.Input.Forbid[url] })
	return kinds
}
