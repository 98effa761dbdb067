// Package mcppin decides what an upstream MCP server's listing does to a
// tool imported from it (definition pinning): the served definition
// changes only when approved. An upstream change (description, schemas,
// annotations, the tool's removal) is held as the tool's pending change,
// diffed by the compatibility engine, until an admin approves or rejects
// it, unless the policy auto-approves every kind of change it makes and no
// admin edited the tool (an admin's definition is never replaced
// automatically).
package mcppin

import (
	"fmt"
	"slices"
	"time"

	"github.com/flowdrop/gateway/registry"
)

// Policy is what the operator lets through without an admin
// (mcp_upstreams.auto_approve): kinds of change (registry.ChangeKindNames).
type Policy struct {
	AutoApprove []string
}

// Check refuses an unknown kind, naming it.
func (p Policy) Check() error {
	for _, k := range p.AutoApprove {
		if !slices.Contains(registry.ChangeKindNames, k) {
			return fmt.Errorf("%q is not a kind of change: want one of %v", k, registry.ChangeKindNames)
		}
	}
	return nil
}

// allows reports whether every kind is auto-approved.
func (p Policy) allows(kinds []string) bool {
	for _, k := range kinds {
		if !slices.Contains(p.AutoApprove, k) {
			return false
		}
	}
	return len(kinds) > 0
}

// Action is what to write.
type Action int

const (
	// None: nothing to write (no change, or the change is already held).
	None Action = iota
	// Hold: write Decision.Tool, which holds the change as pending; the
	// served definition stays.
	Hold
	// Apply: write Decision.Tool, serving the upstream's definition (the
	// policy auto-approved the change).
	Apply
	// Resolve: write Decision.Tool, whose pending change is dropped
	// because the upstream now lists what is served, or what was last
	// accepted; the served definition stays.
	Resolve
	// Delete: delete the tool (the policy auto-approved its removal).
	Delete
)

func (a Action) String() string {
	return [...]string{"none", "hold", "apply", "resolve", "delete"}[a]
}

// Why a change is held.
const (
	HeldByPolicy = "policy" // mcp_upstreams.auto_approve does not name every kind it has
	HeldEdited   = "edited" // an admin's definition: never replaced automatically
)

// Decision is what the follower does with one imported tool.
type Decision struct {
	Action Action
	// Tool is what to write for Hold, Apply and Resolve.
	Tool registry.Tool
	// Kinds and Notes describe the change (Hold, Apply, Delete).
	Kinds []string
	Notes []registry.CompatNote
	// HeldBecause is HeldByPolicy or HeldEdited (Hold).
	HeldBecause string
}

// Decide is what the upstream's listing does to t, a tool imported from
// it (t.Origin set): listed is the upstream's definition of the tool, nil
// when the upstream no longer lists it; now stamps a held change. The
// upstream's definition must already be admissible as t (compiled).
func Decide(t registry.Tool, listed *registry.Definition, p Policy, now time.Time) Decision {
	if t.Origin == nil {
		return Decision{} // an admin's tool: no upstream changes it
	}
	served := t.Definition().Digest()
	edited := t.Origin.UpstreamDigest != served
	held := func(pc registry.PendingChange, kinds []string, notes []registry.CompatNote) Decision {
		why := HeldByPolicy
		if edited {
			why = HeldEdited
		}
		next := t
		next.Pending = &pc
		return Decision{Action: Hold, Tool: next, Kinds: kinds, Notes: notes, HeldBecause: why}
	}
	withOrigin := func(next registry.Tool, digest string) registry.Tool {
		origin := *t.Origin
		origin.UpstreamDigest = digest
		next.Origin, next.Pending = &origin, nil
		return next
	}
	if listed == nil {
		if (t.Pending != nil && t.Pending.Removed) || t.Origin.UpstreamDigest == registry.DigestRemoved {
			return Decision{} // held already, or an admin rejected the removal
		}
		kinds := []string{registry.ChangeRemoval}
		if !edited && p.allows(kinds) {
			return Decision{Action: Delete, Kinds: kinds}
		}
		return held(registry.PendingChange{Removed: true, Digest: registry.DigestRemoved, DetectedAt: now}, kinds, nil)
	}
	d := listed.Digest()
	switch {
	case d == served: // the upstream lists what is served
		if t.Origin.UpstreamDigest == d && t.Pending == nil {
			return Decision{}
		}
		return Decision{Action: Resolve, Tool: withOrigin(t, d)}
	case t.Pending != nil && t.Pending.Digest == d:
		return Decision{} // held already
	case d == t.Origin.UpstreamDigest: // back to what was last accepted
		if t.Pending == nil {
			return Decision{} // an admin's edit stands
		}
		return Decision{Action: Resolve, Tool: withOrigin(t, d)}
	}
	pc := registry.PendingChange{Definition: *listed, Digest: d, DetectedAt: now}
	kinds, notes := registry.ChangeKinds(t, pc)
	if !edited && p.allows(kinds) {
		return Decision{Action: Apply, Tool: withOrigin(t.WithDefinition(*listed), d), Kinds: kinds, Notes: notes}
	}
	return held(pc, kinds, notes)
}
