package registry

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Bundle is a named selection of the registry's tools (a "virtual
// server"): the MCP face serves it as its own endpoint, /mcp/<name>, and
// the registry service's ListTools and ExportTools take it. A tool is in
// the bundle when any one of the selections picks it: it is named in
// Tools, its name matches one of Globs, or its labels satisfy one of
// LabelSelectors. Membership is read from the live tool at the time of
// each request, so a tool registered later with a matching name or label
// joins at once; a listed name that is not registered selects nothing.
// Selecting never widens what a caller may see or call: per-caller
// visibility applies inside a bundle as everywhere.
type Bundle struct {
	// Name matches NamePattern (not "." or "..": it is a URL path segment).
	Name        string
	Description string
	// Tools are tool names (each matching NamePattern).
	Tools []string
	// Globs are path.Match patterns over tool names ("notes.*").
	Globs []string
	// LabelSelectors each are comma-separated requirements, all of which a
	// tool's labels must meet: "key=value" (also "key==value"),
	// "key!=value" (absent or another value), "key" (present), "!key"
	// (absent).
	LabelSelectors []string
	// Discovery is how the bundle's endpoint offers its tools; "" is
	// DiscoveryList.
	Discovery Discovery
	// Revision is assigned by the store on every write.
	Revision int64
}

// Discovery is how a bundle's tools are offered to a client.
type Discovery string

// The discovery modes a bundle's endpoint serves.
const (
	// DiscoveryList offers every tool of the bundle the caller may see in
	// tools/list.
	DiscoveryList Discovery = "list"
	// DiscoverySearch offers, to everyone the endpoint serves, the search
	// and describe meta-tools over the bundle's tools instead of the list
	// (the MCP face's discovery mode, server/mcpapi/view.go).
	DiscoverySearch Discovery = "search"
)

// Bounds on a bundle definition: what a registrant can make every request
// to the bundle's endpoint evaluate.
const (
	MaxBundleTools          = 10000
	MaxBundleGlobs          = 64
	MaxBundleLabelSelectors = 64
	maxBundlePatternBytes   = 256
	maxSelectorRequirements = 32
)

// BundleError reports a bundle definition that cannot be stored.
type BundleError struct {
	Bundle string
	Field  string // "name", "tools[3]", "globs[0]", ...
	Reason string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("bundle %q: %s: %s", e.Bundle, e.Field, e.Reason)
}

// ValidBundleName reports whether name can name a bundle: a tool name
// (NamePattern) that is not a relative path segment.
func ValidBundleName(name string) bool {
	return ValidName(name) && strings.Trim(name, ".") != ""
}

// labelRequirement is one requirement of a label selector.
type labelRequirement struct {
	key, value string
	op         labelOp
}

type labelOp uint8

const (
	labelEquals labelOp = iota + 1
	labelNotEquals
	labelExists
	labelAbsent
)

func (r labelRequirement) holds(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case labelEquals:
		return ok && v == r.value
	case labelNotEquals:
		return !ok || v != r.value
	case labelExists:
		return ok
	case labelAbsent:
		return !ok
	}
	return false // fail closed: an operator this code does not know selects nothing
}

// parseLabelSelector parses one selector (see Bundle.LabelSelectors).
func parseLabelSelector(s string) ([]labelRequirement, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("is empty")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxSelectorRequirements {
		return nil, fmt.Errorf("has %d requirements; at most %d", len(parts), maxSelectorRequirements)
	}
	out := make([]labelRequirement, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		var r labelRequirement
		switch {
		case strings.Contains(p, "!="):
			r.key, r.value, _ = strings.Cut(p, "!=")
			r.op = labelNotEquals
		case strings.Contains(p, "=="):
			r.key, r.value, _ = strings.Cut(p, "==")
			r.op = labelEquals
		case strings.Contains(p, "="):
			r.key, r.value, _ = strings.Cut(p, "=")
			r.op = labelEquals
		case strings.HasPrefix(p, "!"):
			r.key, r.op = p[1:], labelAbsent
		default:
			r.key, r.op = p, labelExists
		}
		r.key, r.value = strings.TrimSpace(r.key), strings.TrimSpace(r.value)
		if r.key == "" || strings.ContainsAny(r.key, "=!, ") {
			return nil, fmt.Errorf("requirement %q: want key, !key, key=value or key!=value", p)
		}
		if strings.ContainsAny(r.value, "=!") {
			return nil, fmt.Errorf("requirement %q: a value cannot hold '=' or '!'", p)
		}
		out = append(out, r)
	}
	return out, nil
}

// BundleEntry is a checked bundle, ready to answer whether it selects a
// tool; entries are shared by snapshots and read-only.
type BundleEntry struct {
	Bundle    Bundle
	tools     map[string]bool
	selectors [][]labelRequirement
}

// CompileBundle checks b and returns its entry, or a *BundleError naming
// the first field at fault.
func CompileBundle(b Bundle) (*BundleEntry, error) {
	bad := func(field, format string, args ...any) error {
		return &BundleError{Bundle: b.Name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !ValidBundleName(b.Name) {
		return nil, bad("name", "must match %s and not be only dots", NamePattern)
	}
	if n := len(b.Description); n > MaxDescriptionBytes {
		return nil, bad("description", "is %d bytes; at most %d", n, MaxDescriptionBytes)
	}
	switch b.Discovery {
	case "", DiscoveryList, DiscoverySearch:
	default:
		// Fail closed: a mode this gateway does not serve would otherwise
		// be served as a full list the registrant meant to avoid.
		return nil, bad("discovery", "%q is not served by this gateway (want %q or %q)", b.Discovery, DiscoveryList, DiscoverySearch)
	}
	if len(b.Tools) > MaxBundleTools {
		return nil, bad("tools", "has %d names; at most %d", len(b.Tools), MaxBundleTools)
	}
	if len(b.Globs) > MaxBundleGlobs {
		return nil, bad("globs", "has %d patterns; at most %d", len(b.Globs), MaxBundleGlobs)
	}
	if len(b.LabelSelectors) > MaxBundleLabelSelectors {
		return nil, bad("label_selectors", "has %d selectors; at most %d", len(b.LabelSelectors), MaxBundleLabelSelectors)
	}
	if len(b.Tools)+len(b.Globs)+len(b.LabelSelectors) == 0 {
		return nil, bad("tools", "a bundle selects tools by name, glob or label selector; none is given")
	}
	e := &BundleEntry{Bundle: b, tools: make(map[string]bool, len(b.Tools))}
	for i, name := range b.Tools {
		if !ValidName(name) {
			return nil, bad(fmt.Sprintf("tools[%d]", i), "must match %s", NamePattern)
		}
		e.tools[name] = true
	}
	for i, g := range b.Globs {
		if g == "" || len(g) > maxBundlePatternBytes {
			return nil, bad(fmt.Sprintf("globs[%d]", i), "must be 1 to %d bytes", maxBundlePatternBytes)
		}
		if _, err := path.Match(g, ""); err != nil {
			return nil, bad(fmt.Sprintf("globs[%d]", i), "is not a valid glob: %v", err)
		}
	}
	for i, s := range b.LabelSelectors {
		if len(s) > maxBundlePatternBytes {
			return nil, bad(fmt.Sprintf("label_selectors[%d]", i), "is %d bytes; at most %d", len(s), maxBundlePatternBytes)
		}
		reqs, err := parseLabelSelector(s)
		if err != nil {
			return nil, bad(fmt.Sprintf("label_selectors[%d]", i), "%v", err)
		}
		e.selectors = append(e.selectors, reqs)
	}
	return e, nil
}

// Selects reports whether the bundle picks t.
func (e *BundleEntry) Selects(t *Tool) bool {
	if e.tools[t.Name] {
		return true
	}
	for _, g := range e.Bundle.Globs {
		if ok, _ := path.Match(g, t.Name); ok { // patterns checked in CompileBundle
			return true
		}
	}
	for _, reqs := range e.selectors {
		if !slices.ContainsFunc(reqs, func(r labelRequirement) bool { return !r.holds(t.Labels) }) {
			return true
		}
	}
	return false
}

// DiscoveryMode is the bundle's discovery mode with the default applied.
func (b Bundle) DiscoveryMode() Discovery {
	if b.Discovery == "" {
		return DiscoveryList
	}
	return b.Discovery
}

// Clone is a copy of b sharing nothing with it.
func (b Bundle) Clone() Bundle {
	b.Tools = slices.Clone(b.Tools)
	b.Globs = slices.Clone(b.Globs)
	b.LabelSelectors = slices.Clone(b.LabelSelectors)
	return b
}
