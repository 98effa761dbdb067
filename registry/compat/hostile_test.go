package compat_test

import (
	"strconv"
	"testing"

	"github.com/flowdrop/gateway/registry/compat"
)

// dag is a schema whose references double per level: inlined, n levels
// are 2^n leaves. leaf is the schema at the bottom.
func dag(n int, leaf map[string]any) map[string]any {
	defs := map[string]any{"d" + strconv.Itoa(n): leaf}
	for i := n - 1; i >= 0; i-- {
		ref := map[string]any{"$ref": "#/$defs/d" + strconv.Itoa(i+1)}
		defs["d"+strconv.Itoa(i)] = map[string]any{"type": "object", "properties": map[string]any{"a": ref, "b": ref}}
	}
	return map[string]any{"type": "object", "properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/d0"}}, "$defs": defs}
}

// nested is n objects deep with leaf at the bottom.
func nested(n int, leaf map[string]any) map[string]any {
	s := leaf
	for range n {
		s = map[string]any{"type": "object", "properties": map[string]any{"x": s}}
	}
	return s
}

// TestCompareHostile: schemas built to make a comparison explode end in
// the bounds — one too-complex finding, breaking — while the same
// schemas unchanged are compatible.
func TestCompareHostile(t *testing.T) {
	bigEnum := func(n, drop int) map[string]any {
		var vals []any
		for i := range n {
			if i != drop {
				vals = append(vals, float64(i))
			}
		}
		return map[string]any{"type": "object", "properties": map[string]any{"e": map[string]any{"enum": vals}}}
	}
	cases := []struct {
		reason   string
		old, new map[string]any
		complex  bool
	}{
		{reason: "references doubling over 40 levels (2^40 paths) are cut off by the comparison budget",
			old: dag(40, map[string]any{"type": "string"}), new: dag(40, map[string]any{"type": "string", "maxLength": 3}), complex: true},
		{reason: "the same doubling schema unchanged is compatible at once", old: dag(40, map[string]any{"type": "string"}), new: dag(40, map[string]any{"type": "string"})},
		{reason: "nesting past MaxDepth is too complex", old: nested(100, map[string]any{"type": "string"}), new: nested(100, map[string]any{"type": "integer"}), complex: true},
		{reason: "nesting within MaxDepth is compared", old: nested(20, map[string]any{"type": "string"}), new: nested(20, map[string]any{"type": "integer"})},
		{reason: "documents over MaxNodes are too complex", old: bigEnum(compat.MaxNodes, -1), new: bigEnum(compat.MaxNodes, 0), complex: true},
		{reason: "an old enum over the probe bound is too complex", old: bigEnum(1000, -1), new: bigEnum(1000, 7), complex: true},
		{reason: "an old enum within the probe bound is checked value by value", old: bigEnum(100, -1), new: bigEnum(100, 7)},
	}
	for _, c := range cases {
		fs := compat.Compare(c.old, c.new)
		tooComplex := false
		for _, f := range fs {
			tooComplex = tooComplex || f.Kind == compat.TooComplex
		}
		switch {
		case c.complex && !tooComplex:
			t.Errorf("%s: findings %v, want a too-complex one", c.reason, fs)
		case !c.complex && tooComplex:
			t.Errorf("%s: findings %v, want none too complex", c.reason, fs)
		}
		if c.old != nil && len(fs) == 0 && c.complex {
			t.Errorf("%s: compatible, want breaking", c.reason)
		}
	}
	// The rows within the bounds still find what changed.
	if fs := compat.Compare(nested(20, map[string]any{"type": "string"}), nested(20, map[string]any{"type": "integer"})); len(fs) != 1 || fs[0].Keyword != "type" {
		t.Errorf("20 levels deep: %v, want one type narrowing", fs)
	}
	if fs := compat.Compare(bigEnum(100, -1), bigEnum(100, 7)); len(fs) != 1 || fs[0].Path != "/properties/e/enum" {
		t.Errorf("an enum value dropped from 100: %v, want one enum narrowing", fs)
	}
}

// TestCompareMalformed: values that are not schemas where schemas belong
// (which compilation refuses, but the engine must not trust it) are
// breaking, never a panic.
func TestCompareMalformed(t *testing.T) {
	old := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	for _, bad := range []any{
		map[string]any{"a": 5.0},
		map[string]any{"a": map[string]any{"allOf": []any{"x"}}},
		map[string]any{"a": map[string]any{"items": 3.0, "type": "array"}},
		map[string]any{"a": map[string]any{"anyOf": "x"}},
	} {
		new := map[string]any{"type": "object", "properties": bad}
		if fs := compat.Compare(old, new); len(fs) == 0 {
			t.Errorf("properties %v: compatible, want breaking", bad)
		}
	}
}
