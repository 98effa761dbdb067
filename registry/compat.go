package registry

import "github.com/flowdrop/gateway/registry/compat"

// CompatNote is one way a new tool definition may break callers of the old.
type CompatNote struct {
	// Path is a JSON Pointer into the input schema as walked from its root
	// (through $ref as if inlined): the parameter for "removed" and
	// "newly-required" ("/properties/ops"), the keyword for "narrowed"
	// ("/properties/ops/maximum"), "" for "too-complex".
	Path string
	// Kind is "removed", "newly-required", "narrowed" or "too-complex".
	Kind string
	// Keyword is the JSON Schema keyword that narrows.
	Keyword string
	Message string
}

// Compatibility note kinds.
const (
	CompatRemoved       = string(compat.Removed)
	CompatNewlyRequired = string(compat.NewlyRequired)
	CompatNarrowed      = string(compat.Narrowed)
	CompatTooComplex    = string(compat.TooComplex)
)

// CheckCompatibility lists the changes from old to new input schema that
// can refuse arguments old accepted (registry/compat: every narrowing of
// the accepted set, each by pointer and keyword; a schema too complex to
// compare is one "too-complex" note, which counts as breaking). Notes are
// sorted by path.
func CheckCompatibility(old, new Tool) []CompatNote {
	if old.InputSchema == nil || new.InputSchema == nil {
		return nil
	}
	fs := compat.Compare(old.InputSchema.AsMap(), new.InputSchema.AsMap())
	if len(fs) == 0 {
		return nil
	}
	notes := make([]CompatNote, len(fs))
	for i, f := range fs {
		notes[i] = CompatNote{Path: f.Path, Kind: string(f.Kind), Keyword: f.Keyword, Message: f.Message}
	}
	return notes
}
