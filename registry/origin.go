package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Origin says a tool was imported from an upstream MCP server. The
// upstream defines the tool's Definition; a change it makes later is held
// as the tool's PendingChange until an admin approves it (or the policy
// auto-approves its kind), so the served definition is never the
// upstream's to change at will. A tool without an Origin was written by an
// admin: no follower changes or deletes it.
type Origin struct {
	// MCPUpstream is the upstream's URL (the tool's spec.mcp_tool.url).
	MCPUpstream string
	// UpstreamDigest is the Definition.Digest of the upstream's definition
	// as last accepted (imported, approved or rejected); DigestRemoved
	// after a removal was rejected. The follower holds a change only when
	// the upstream's listing differs from it.
	UpstreamDigest string
}

// DigestRemoved is Origin.UpstreamDigest after an admin rejected the
// upstream's removal of the tool: its absence is not proposed again.
const DigestRemoved = "removed"

// Definition is the part of a tool an upstream MCP server defines.
type Definition struct {
	Description  string
	InputSchema  *structpb.Struct
	OutputSchema *structpb.Struct
	Annotations  *ToolAnnotations
}

// Definition is the tool's upstream-defined part as it is served.
func (t Tool) Definition() Definition {
	return Definition{Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
}

// WithDefinition is t serving d.
func (t Tool) WithDefinition(d Definition) Tool {
	t.Description, t.InputSchema, t.OutputSchema, t.Annotations = d.Description, d.InputSchema, d.OutputSchema, d.Annotations
	return t
}

// Digest is the hex SHA-256 of d's canonical JSON (object keys sorted):
// equal definitions have equal digests whatever their key order.
func (d Definition) Digest() string {
	doc := map[string]any{"description": d.Description}
	if d.InputSchema != nil {
		doc["input_schema"] = d.InputSchema.AsMap()
	}
	if d.OutputSchema != nil {
		doc["output_schema"] = d.OutputSchema.AsMap()
	}
	if a := d.Annotations; a != nil {
		hints := map[string]any{}
		for k, v := range map[string]*bool{"read_only": a.ReadOnlyHint, "destructive": a.DestructiveHint, "idempotent": a.IdempotentHint, "open_world": a.OpenWorldHint} {
			if v != nil {
				hints[k] = *v
			}
		}
		doc["annotations"] = hints
	}
	b, err := json.Marshal(doc)
	if err != nil { // a NaN or infinity in a schema: fmt prints maps sorted too
		b = fmt.Appendf(nil, "%#v", doc)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Equal reports whether d and e define the same tool.
func (d Definition) Equal(e Definition) bool {
	return d.Description == e.Description && proto.Equal(d.InputSchema, e.InputSchema) &&
		proto.Equal(d.OutputSchema, e.OutputSchema) && sameAnnotations(d.Annotations, e.Annotations)
}

// Edited reports whether an imported tool's served definition is not the
// upstream's as last accepted: an admin edited it, or rejected an upstream
// change. No upstream change is ever auto-approved over such a tool.
func (t Tool) Edited() bool {
	return t.Origin != nil && t.Origin.UpstreamDigest != t.Definition().Digest()
}

// ImportedFrom reports whether t was imported from the upstream MCP server
// at url (and still calls it): only such a tool is followed.
func (t Tool) ImportedFrom(url string) bool {
	return t.Origin != nil && t.Origin.MCPUpstream == url && t.Spec != nil && t.Spec.MCPTool != nil && t.Spec.MCPTool.URL == url
}

// PendingChange is an upstream's change to an imported tool held for an
// admin's approval. It is stored with the tool (every replica sees it);
// the served definition stays the tool's own until it is approved.
type PendingChange struct {
	// Removed: the upstream no longer lists the tool; approving deletes it.
	Removed bool
	// Definition is the upstream's new definition (zero when Removed).
	Definition Definition
	// Digest is Definition.Digest, or DigestRemoved.
	Digest string
	// DetectedAt is when the change was held.
	DetectedAt time.Time
}

// The kinds of an upstream change (ChangeKinds), which the policy's
// mcp_upstreams.auto_approve names.
const (
	ChangeDescription        = "description"
	ChangeCompatibleSchema   = "compatible-schema"   // input schema; the compatibility engine finds no note
	ChangeIncompatibleSchema = "incompatible-schema" // input schema with compatibility notes
	ChangeOutputSchema       = "output-schema"
	ChangeAnnotations        = "annotations"
	ChangeRemoval            = "removal"
)

// ChangeKindNames are every change kind, in the order ChangeKinds lists them.
var ChangeKindNames = []string{ChangeDescription, ChangeCompatibleSchema, ChangeIncompatibleSchema, ChangeOutputSchema, ChangeAnnotations, ChangeRemoval}

// ChangeKinds is what serving p instead of t's definition changes, and the
// compatibility engine's notes on the input schema (CheckCompatibility).
func ChangeKinds(t Tool, p PendingChange) ([]string, []CompatNote) {
	if p.Removed {
		return []string{ChangeRemoval}, nil
	}
	old, next := t.Definition(), p.Definition
	var kinds []string
	var notes []CompatNote
	if old.Description != next.Description {
		kinds = append(kinds, ChangeDescription)
	}
	if !proto.Equal(old.InputSchema, next.InputSchema) {
		notes = CheckCompatibility(t, t.WithDefinition(next))
		if len(notes) == 0 {
			kinds = append(kinds, ChangeCompatibleSchema)
		} else {
			kinds = append(kinds, ChangeIncompatibleSchema)
		}
	}
	if !proto.Equal(old.OutputSchema, next.OutputSchema) {
		kinds = append(kinds, ChangeOutputSchema)
	}
	if !sameAnnotations(old.Annotations, next.Annotations) {
		kinds = append(kinds, ChangeAnnotations)
	}
	return kinds, notes
}

// checkOrigin admits a tool's origin and pending change: an origin names
// the tool's own upstream (only an upstream MCP tool is imported from
// one), and a pending change's definition must compile as the tool.
func checkOrigin(t Tool, compile func(Tool) (*Entry, error)) error {
	if t.Origin == nil {
		if t.Pending != nil {
			return &ToolError{Tool: t.Name, Field: "pending", Reason: "only an imported tool (with an origin) has a pending change"}
		}
		return nil
	}
	switch d := t.Origin.UpstreamDigest; {
	case t.Origin.MCPUpstream == "":
		return &ToolError{Tool: t.Name, Field: "origin.mcp_upstream", Reason: "must name the upstream MCP server the tool was imported from"}
	case t.Spec == nil || t.Spec.MCPTool == nil || t.Spec.MCPTool.URL != t.Origin.MCPUpstream:
		return &ToolError{Tool: t.Name, Field: "origin.mcp_upstream", Reason: "must equal spec.mcp_tool.url: only an upstream MCP tool is imported from one"}
	case d != "" && d != DigestRemoved && !isHexDigest(d):
		return &ToolError{Tool: t.Name, Field: "origin.upstream_digest", Reason: "must be a hex SHA-256 (or empty: the registry computes it)"}
	}
	if p := t.Pending; p != nil && !p.Removed {
		if _, err := compile(t.WithDefinition(p.Definition)); err != nil {
			return fmt.Errorf("pending change: %w", err)
		}
	}
	return nil
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// NoPendingChangeError answers an approval or rejection of a tool that has
// no pending change.
type NoPendingChangeError struct{ Tool string }

func (e *NoPendingChangeError) Error() string {
	return fmt.Sprintf("tool %q has no pending upstream change", e.Tool)
}
