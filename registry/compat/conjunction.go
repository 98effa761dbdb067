package compat

import (
	"reflect"
	"slices"
	"strconv"
)

// conjuncts takes n apart into the schemas a value must satisfy all of:
// the targets of "$ref" (resolved in root), the members of "allOf", and
// n's other keywords. Each is a boolean or a map with neither "$ref" nor
// "allOf". A reference that does not resolve ends the comparison as too
// complex.
func (c *comparer) conjuncts(root map[string]any, n node, depth int) []node {
	var out []node
	var add func(n node, d int)
	add = func(n node, d int) {
		c.step(d)
		m, ok := n.v.(map[string]any)
		if !ok {
			if b, isBool := n.v.(bool); isBool && b {
				return
			}
			out = append(out, n) // false, or not a schema: compare reports it
			return
		}
		rest, loc := m, n.loc
		if r, has := m["$ref"]; has {
			ref, _ := r.(string)
			t, ok := c.deref(root, ref)
			if !ok {
				panic(errTooComplex{"$ref " + strconv.Quote(ref) + " does not resolve"})
			}
			add(t, d+1)
			rest, loc = without(rest, "$ref"), ""
		}
		if v, has := m["allOf"]; has {
			all, ok := v.([]any)
			if !ok {
				panic(errTooComplex{"allOf is not a list"})
			}
			for i, x := range all {
				add(child(n, x, "allOf", strconv.Itoa(i)), d+1)
			}
			rest, loc = without(rest, "allOf"), ""
		}
		if len(rest) > 0 || len(m) == 0 {
			out = append(out, node{v: rest, loc: loc})
		}
	}
	add(n, depth)
	return out
}

// view is the old schema o as one map: its conjuncts merged. Merging may
// leave out a conjunct's keyword it cannot combine (a second "pattern", a
// second "anyOf"): the view then accepts more than o, so a comparison
// that finds it compatible holds for o too. A false conjunct makes the
// view false.
func (c *comparer) view(root map[string]any, o node, depth int) node {
	parts := c.conjuncts(root, o, depth)
	switch len(parts) {
	case 0:
		return node{v: map[string]any{}, loc: o.loc}
	case 1:
		if _, ok := parts[0].v.(map[string]any); ok {
			return parts[0]
		}
	}
	m := map[string]any{}
	for _, p := range parts {
		switch pv := p.v.(type) {
		case bool:
			if !pv {
				return node{v: false}
			}
		case map[string]any:
			m = merge(m, pv)
		default:
			panic(errTooComplex{"a subschema is not an object or boolean"})
		}
	}
	return node{v: m}
}

// merge is the conjunction of two old-side maps as one (a new map; a and
// b are not changed), within what keyword-wise combination can say.
func merge(a, b map[string]any) map[string]any {
	m := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, bv := range b {
		av, ok := m[k]
		if !ok {
			m[k] = bv
			continue
		}
		if reflect.DeepEqual(av, bv) {
			continue
		}
		switch k {
		case "type":
			at, _ := typeSet(map[string]any{"type": av})
			bt, _ := typeSet(map[string]any{"type": bv})
			var both []any
			for _, t := range at {
				switch {
				case admits(bt, t):
					both = append(both, t)
				case t == "number" && slices.Contains(bt, "integer"):
					both = append(both, "integer")
				}
			}
			m[k] = both
		case "required":
			l, _ := av.([]any)
			out := slices.Clone(l)
			bl, _ := bv.([]any)
			for _, x := range bl {
				if !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
			m[k] = out
		case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
			if x, y, ok := twoNumbers(av, bv); ok {
				m[k] = max(x, y)
			}
		case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
			if x, y, ok := twoNumbers(av, bv); ok {
				m[k] = min(x, y)
			}
		case "uniqueItems":
			m[k] = av == true || bv == true
		case "enum":
			al, _ := av.([]any)
			bl, _ := bv.([]any)
			var both []any
			for _, x := range al {
				if slices.ContainsFunc(bl, func(y any) bool { return reflect.DeepEqual(x, y) }) {
					both = append(both, x)
				}
			}
			m[k] = both
		case "properties":
			ap, _ := av.(map[string]any)
			bp, _ := bv.(map[string]any)
			props := make(map[string]any, len(ap)+len(bp))
			for name, s := range ap {
				props[name] = s
			}
			for name, s := range bp {
				if prev, ok := props[name]; ok {
					props[name] = map[string]any{"allOf": []any{prev, s}}
				} else {
					props[name] = s
				}
			}
			m[k] = props
		case "items", "additionalProperties":
			m[k] = map[string]any{"allOf": []any{av, bv}}
		}
		// Any other keyword keeps a's value: b's is left out (see view).
	}
	return m
}

func twoNumbers(a, b any) (float64, float64, bool) {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	return x, y, ok1 && ok2
}
