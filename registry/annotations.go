package registry

// ToolAnnotations are MCP's tool annotations: hints about what a call does.
// A nil field is unset (MCP's default applies). Only IdempotentHint changes
// what the gateway does: such a tool's calls are retried when its backend
// is unavailable.
type ToolAnnotations struct {
	ReadOnlyHint    *bool
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

// Idempotent reports whether the tool is marked idempotent (annotations
// idempotent_hint true): calling it again with the same arguments has no
// further effect, so a call the backend may not have completed can be
// retried.
func (t Tool) Idempotent() bool {
	return t.Annotations != nil && t.Annotations.IdempotentHint != nil && *t.Annotations.IdempotentHint
}

func sameAnnotations(a, b *ToolAnnotations) bool {
	if a == nil || b == nil {
		return a == b
	}
	return sameHint(a.ReadOnlyHint, b.ReadOnlyHint) && sameHint(a.DestructiveHint, b.DestructiveHint) &&
		sameHint(a.IdempotentHint, b.IdempotentHint) && sameHint(a.OpenWorldHint, b.OpenWorldHint)
}

func sameHint(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
