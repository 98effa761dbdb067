package policy

import (
	"fmt"
	"path"
)

// What the normalize stage does with a null sent for an optional property
// whose schema does not admit null (normalize.optional_nulls). Outside
// RT-TOOL-8, so off by default.
const (
	OptionalNullsKeep = "keep" // left for validation, which refuses it (the default)
	OptionalNullsDrop = "drop" // removed as if absent, reported as a null-dropped repair
)

// OptionalNullsConfig is normalize.optional_nulls with its per-tool
// overrides.
type OptionalNullsConfig struct {
	// Mode is OptionalNullsKeep (also "") or OptionalNullsDrop.
	Mode string
	// Tools overrides Mode for the tools whose names match (path.Match
	// globs, as rate_limit.tools; the first match wins).
	Tools []ToolOptionalNulls
}

// ToolOptionalNulls is one per-tool override of OptionalNullsConfig.
type ToolOptionalNulls struct {
	Match string // a path.Match glob over tool names
	Mode  string // OptionalNullsKeep or OptionalNullsDrop
}

// OptionalNulls says per tool whether optional nulls are dropped. Nil
// drops none. Immutable.
type OptionalNulls struct{ cfg OptionalNullsConfig }

// NewOptionalNulls checks cfg. It returns nil, nil when no tool drops
// (the default), so the normalize stage's check is one nil comparison.
func NewOptionalNulls(cfg OptionalNullsConfig) (*OptionalNulls, error) {
	if err := checkNullsMode("normalize.optional_nulls", cfg.Mode, true); err != nil {
		return nil, err
	}
	drops := cfg.Mode == OptionalNullsDrop
	for i, o := range cfg.Tools {
		at := fmt.Sprintf("normalize.tools[%d]", i)
		if _, err := path.Match(o.Match, ""); err != nil || o.Match == "" {
			return nil, fmt.Errorf("%s: match %q is not a tool-name glob", at, Bound(o.Match))
		}
		if err := checkNullsMode(at+".optional_nulls", o.Mode, false); err != nil {
			return nil, err
		}
		drops = drops || o.Mode == OptionalNullsDrop
	}
	if !drops {
		return nil, nil
	}
	return &OptionalNulls{cfg: cfg}, nil
}

func checkNullsMode(at, mode string, emptyOK bool) error {
	switch {
	case mode == OptionalNullsKeep || mode == OptionalNullsDrop:
		return nil
	case mode == "" && emptyOK:
		return nil
	case mode == "":
		return fmt.Errorf(`%s is not set: write "keep" or "drop"`, at)
	}
	return fmt.Errorf(`%s %q: must be "keep" or "drop"`, at, Bound(mode))
}

// Drop reports whether the tool's optional nulls are dropped: the first
// matching override's mode, else the default.
func (o *OptionalNulls) Drop(tool string) bool {
	if o == nil {
		return false
	}
	for _, t := range o.cfg.Tools {
		if ok, _ := path.Match(t.Match, tool); ok { // patterns checked in NewOptionalNulls
			return t.Mode == OptionalNullsDrop
		}
	}
	return o.cfg.Mode == OptionalNullsDrop
}
