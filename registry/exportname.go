package registry

import "maps"

// Provider-safe names. Model APIs take narrower tool names than the
// registry (NamePattern allows '.'; a gRPC method imported as a tool is
// named <package>.<Service>.<Method>): OpenAI ^[a-zA-Z0-9_-]{1,64}$,
// Anthropic ^[a-zA-Z0-9_-]{1,128}$ (documented as {1,64}), Gemini a letter
// or '_' first, then [a-zA-Z0-9_.:-], at most 64 (registry/lint holds the
// sources). Every tool is exported under one name all of them take:
//
//   - a name already safe everywhere ([a-zA-Z_] then [a-zA-Z0-9_-], at
//     most 64) is its own export name;
//   - otherwise each '.' becomes '_', and a name starting with a digit
//     or '-' gets a leading '_' ("notes.v1.Notes.Create" →
//     "notes_v1_Notes_Create");
//
// deterministic, and never longer than the name but for that one '_'. The
// mapping is not one-to-one ("a.b" and "a_b" meet), so a Snapshot serves
// an export name only when exactly one tool has it and no tool is named
// it (Snapshot.ExportName): a tool whose export name is taken is left out
// of exports, named, and an admin gives it an alias. A call by an export
// name reaches its tool (Snapshot.Resolve); a registered name always wins.

// maxExportNameBytes is the longest export name (OpenAI's and Gemini's bound).
const maxExportNameBytes = 64

// ProviderSafe reports whether name is a tool name every provider format
// takes as it is.
func ProviderSafe(name string) bool {
	if len(name) == 0 || len(name) > maxExportNameBytes || !nameStart(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; !nameStart(b) && (b < '0' || b > '9') && b != '-' {
			return false
		}
	}
	return true
}

func nameStart(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '_' }

// ExportName is the name a tool called name is exported under (the
// mapping above), whether or not a snapshot can serve it; "" when name
// has no safe form within the length bound.
func ExportName(name string) string {
	if ProviderSafe(name) {
		return name
	}
	b := make([]byte, 0, len(name)+1)
	if len(name) > 0 && !nameStart(name[0]) {
		b = append(b, '_')
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '.' {
			c = '_'
		}
		b = append(b, c)
	}
	if s := string(b); ProviderSafe(s) {
		return s
	}
	return ""
}

// ExportNames is the export-name index of a set of tools (a Snapshot
// keeps one of its tools): which export names it can serve.
type ExportNames struct {
	registered func(name string) bool
	// exported maps the export names that differ from their tool's name
	// to the tool's name; "" marks a name two tools map to, or one a tool
	// is registered under (ambiguous: served to neither). Only names that
	// are not provider-safe have an entry: a snapshot of safe names
	// allocates nothing for them.
	exported map[string]string
}

// NewExportNames indexes the tools named names.
func NewExportNames(names []string) *ExportNames {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	x := &ExportNames{registered: func(n string) bool { return set[n] }}
	for _, n := range names {
		x.add(n)
	}
	return x
}

func exportIndex(entries map[string]*Entry) *ExportNames {
	x := &ExportNames{registered: func(n string) bool { _, ok := entries[n]; return ok }}
	for n := range entries {
		x.add(n)
	}
	return x
}

// over is x for a set of the same names held in entries.
func (x *ExportNames) over(entries map[string]*Entry) *ExportNames {
	return &ExportNames{registered: func(n string) bool { _, ok := entries[n]; return ok }, exported: x.exported}
}

// adding is x with the new name added (entries holds x's names and it):
// what exportIndex(entries) builds, without visiting every name.
func (x *ExportNames) adding(name string, entries map[string]*Entry) *ExportNames {
	c := x.over(entries)
	e := ExportName(name)
	_, shadows := x.exported[name] // a tool exported as name: ambiguous now
	if !shadows && (e == "" || e == name) {
		return c // nothing of the index changes: share it
	}
	c.exported = maps.Clone(x.exported)
	if shadows {
		c.exported[name] = ""
	}
	c.add(name)
	return c
}

func (x *ExportNames) add(name string) {
	e := ExportName(name)
	if e == "" || e == name {
		return
	}
	if x.exported == nil {
		x.exported = make(map[string]string)
	}
	if _, taken := x.exported[e]; taken || x.registered(e) {
		x.exported[e] = ""
		return
	}
	x.exported[e] = name
}

// ExportName is the name the tool called name is exported under, and
// whether it can be served: false when no tool of the set is called name,
// the name has no safe form, or its export name is another tool's or
// shared with one.
func (x *ExportNames) ExportName(name string) (string, bool) {
	if !x.registered(name) {
		return "", false
	}
	e := ExportName(name)
	if e == "" {
		return "", false
	}
	return e, e == name || x.exported[e] == name
}

// ExportName is the snapshot's ExportNames.ExportName.
func (s *Snapshot) ExportName(name string) (string, bool) { return s.exported.ExportName(name) }

// ExportNames is the snapshot's export-name index.
func (s *Snapshot) ExportNames() *ExportNames { return s.exported }

// Resolve is the entry a call naming name is for: the tool registered as
// name, else the tool exported as name (a provider-safe form of its own
// name that only it has).
func (s *Snapshot) Resolve(name string) (*Entry, bool) {
	if e, ok := s.entries[name]; ok {
		return e.compiled()
	}
	if orig := s.exported.exported[name]; orig != "" {
		return s.entries[orig].compiled()
	}
	return nil, false
}

// Resolve is Snapshot.Resolve on the current snapshot, without a lock.
func (r *Registry) Resolve(name string) (*Entry, bool) { return r.snap.Load().Resolve(name) }
