package compat

import (
	"math"
	"slices"
	"strings"
)

// allTypes are the JSON types, with "integer" for the numbers that are
// whole: a schema without "type" admits all of them.
var allTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// typeSet is m's declared "type" as a sorted list, and whether it has one.
func typeSet(m map[string]any) ([]string, bool) {
	var out []string
	switch t := m["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	default:
		if _, has := m["type"]; !has {
			return nil, false
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

// typesOf is the types m admits: its declared "type" ("number" including
// "integer"), or all of them.
func typesOf(m map[string]any) []string {
	ts, has := typeSet(m)
	if !has {
		return allTypes
	}
	if slices.Contains(ts, "number") && !slices.Contains(ts, "integer") {
		ts = append(slices.Clone(ts), "integer")
		slices.Sort(ts)
	}
	return ts
}

// admits reports whether a declared type list admits every value of type t.
func admits(declared []string, t string) bool {
	return slices.Contains(declared, t) || (t == "integer" && slices.Contains(declared, "number"))
}

func typeList(ts []string) string {
	if slices.Equal(ts, allTypes) {
		return "any type"
	}
	// "number" stands for "integer" too.
	var out []string
	for _, t := range ts {
		if t == "integer" && slices.Contains(ts, "number") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, "|")
}

// valueType is the JSON type of a decoded value ("integer" for a whole
// number).
func valueType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if t == math.Trunc(t) && !math.IsInf(t, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}
