package registry

import (
	"fmt"
	"slices"
	"strings"
)

// CompatNote is one way a new tool definition may break callers of the old.
type CompatNote struct {
	// Path is a JSON Pointer into the input schema, e.g. "/properties/ops".
	Path string
	// Kind is "removed", "newly-required" or "narrowed".
	Kind    string
	Message string
}

// Compatibility note kinds.
const (
	CompatRemoved       = "removed"
	CompatNewlyRequired = "newly-required"
	CompatNarrowed      = "narrowed"
)

// CheckCompatibility lists the changes from old to new that can break a
// caller that was valid against old: a parameter removed, newly required,
// or narrowed in type (the new declared type set is not a superset of the
// old; "number" covers "integer"). It follows properties of nested objects
// and local $refs; other keywords (enum, bounds, patterns) are not compared.
// Notes are sorted by path.
func CheckCompatibility(old, new Tool) []CompatNote {
	if old.InputSchema == nil || new.InputSchema == nil {
		return nil
	}
	o, n := old.InputSchema.AsMap(), new.InputSchema.AsMap()
	var notes []CompatNote
	compareObject(o, n, o, n, "", "", &notes)
	slices.SortStableFunc(notes, func(a, b CompatNote) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return notes
}

func compareObject(oRoot, nRoot, o, n map[string]any, path, display string, notes *[]CompatNote) {
	o, n = resolve(oRoot, o), resolve(nRoot, n)
	oProps, _ := o["properties"].(map[string]any)
	nProps, _ := n["properties"].(map[string]any)
	oReq, nReq := stringSet(o["required"]), stringSet(n["required"])
	keys := make([]string, 0, len(oProps))
	for k := range oProps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "/properties/" + escapeToken(k)
		name := display + k
		os, _ := oProps[k].(map[string]any)
		ns, ok := nProps[k].(map[string]any)
		if _, present := nProps[k]; !present {
			*notes = append(*notes, CompatNote{Path: p, Kind: CompatRemoved, Message: fmt.Sprintf("parameter `%s` was removed", name)})
			continue
		}
		if !ok || os == nil {
			continue // boolean schemas: nothing to compare
		}
		ot, nt := declaredTypes(oRoot, os, 0), declaredTypes(nRoot, ns, 0)
		if !covers(nt, ot) {
			*notes = append(*notes, CompatNote{Path: p, Kind: CompatNarrowed, Message: fmt.Sprintf("parameter `%s` narrowed from %s to %s", name, typeList(ot), typeList(nt))})
		}
		if slices.Contains(ot, "object") && slices.Contains(nt, "object") {
			compareObject(oRoot, nRoot, os, ns, p, name+".", notes)
		}
	}
	req := make([]string, 0, len(nReq))
	for k := range nReq {
		if !oReq[k] {
			req = append(req, k)
		}
	}
	slices.Sort(req)
	for _, k := range req {
		*notes = append(*notes, CompatNote{Path: path + "/properties/" + escapeToken(k), Kind: CompatNewlyRequired, Message: fmt.Sprintf("parameter `%s` is newly required", display+k)})
	}
}

// resolve follows a local "$ref" ("#/…") chain, at most a few hops.
func resolve(root, s map[string]any) map[string]any {
	for range 8 {
		ref, ok := s["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return s
		}
		t, ok := walkPointer(root, strings.TrimPrefix(ref, "#"))
		if !ok {
			return s
		}
		s = t
	}
	return s
}

func walkPointer(root map[string]any, ptr string) (map[string]any, bool) {
	var cur any = root
	if ptr != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			cur = m[tok]
		}
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// allTypes stands for "no type constraint".
var allTypes = []string{"array", "boolean", "null", "number", "object", "string"}

// declaredTypes is the set of JSON types a schema admits, judged from
// "type", local $refs and anyOf/oneOf branches (union) — sorted.
func declaredTypes(root, s map[string]any, depth int) []string {
	s = resolve(root, s)
	if depth > 8 {
		return allTypes
	}
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
	default:
		for _, kw := range []string{"anyOf", "oneOf"} {
			branches, ok := s[kw].([]any)
			if !ok {
				continue
			}
			for _, b := range branches {
				bm, ok := b.(map[string]any)
				if !ok {
					return allTypes
				}
				out = append(out, declaredTypes(root, bm, depth+1)...)
			}
		}
		if out == nil {
			return allTypes
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// covers reports whether every type in old is admitted by new.
func covers(new, old []string) bool {
	for _, t := range old {
		if slices.Contains(new, t) || (t == "integer" && slices.Contains(new, "number")) {
			continue
		}
		return false
	}
	return true
}

func typeList(ts []string) string {
	if slices.Equal(ts, allTypes) {
		return "any type"
	}
	return strings.Join(ts, "|")
}

func stringSet(v any) map[string]bool {
	a, _ := v.([]any)
	m := make(map[string]bool, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			m[s] = true
		}
	}
	return m
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}
