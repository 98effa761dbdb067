package compat

import (
	"reflect"
	"slices"
	"strconv"
)

// composition compares the new conjunct's anyOf and oneOf with the old
// view (which has no disjunction of its own left, or one the new side
// does not keep): every value the old accepted must match a new branch,
// and for oneOf no second one.
func (c *comparer) composition(ov, cj node, a at) {
	nm := cj.v.(map[string]any)
	for _, kw := range []string{"anyOf", "oneOf"} {
		v, has := nm[kw]
		if !has {
			continue
		}
		l, ok := v.([]any)
		if !ok {
			c.add(a.path, kw, TooComplex, "breaking: too complex to compare (%s: %s is not a list)", a.subject(), kw)
			continue
		}
		fit := -1
		for i, b := range l {
			bn := child(cj, b, kw, strconv.Itoa(i))
			if c.try(func() { c.compare(ov, bn, a.sub("", kw, strconv.Itoa(i))) }) {
				fit = i
				break
			}
		}
		if fit < 0 {
			c.add(a.path, kw, Narrowed, "%s: no %s branch accepts every value accepted before (a branch was removed or narrowed)", a.subject(), kw)
			continue
		}
		if kw != "oneOf" || sameNoRef(ov.v.(map[string]any)[oneOfMark], l) {
			continue
		}
		for i, b := range l {
			if i == fit {
				continue
			}
			bv := c.view(c.new, child(cj, b, kw, strconv.Itoa(i)), a.depth+1)
			if !c.disjoint(ov, bv, a.depth+1) {
				c.add(a.path, kw, Narrowed, "%s: a value accepted before may match oneOf branches %d and %d, and oneOf refuses a value matching two", a.subject(), fit, i)
				break
			}
		}
	}
}

// disjoint reports whether no value is accepted by both x (an old view)
// and y (a new view): their types do not meet, or both require a property
// whose allowed values (const or enum) do not meet — a tagged union.
func (c *comparer) disjoint(x, y node, depth int) bool {
	c.step(depth)
	xm, ok1 := x.v.(map[string]any)
	ym, ok2 := y.v.(map[string]any)
	if !ok1 || !ok2 {
		return x.v == false || y.v == false
	}
	if xv, _, ok := finiteValues(xm); ok {
		if yv, _, ok := finiteValues(ym); ok && !meet(xv, yv) {
			return true
		}
	}
	xt, yt := typesOf(xm), typesOf(ym)
	if !slices.ContainsFunc(xt, func(t string) bool { return admits(yt, t) || (t == "number" && slices.Contains(yt, "integer")) }) {
		return true
	}
	if !slices.Contains(xt, "object") || !slices.Contains(yt, "object") {
		return false
	}
	// Where both could be objects: a discriminating required property.
	// Non-object values the two share would still overlap.
	for _, t := range xt {
		if t != "object" && admits(yt, t) {
			return false
		}
	}
	xr, yr := requiredSet(xm), requiredSet(ym)
	xp, _ := xm["properties"].(map[string]any)
	yp, _ := ym["properties"].(map[string]any)
	for _, k := range sortedKeys(xp) {
		if !xr[k] || !yr[k] {
			continue
		}
		ys, ok := yp[k]
		if !ok {
			continue
		}
		if c.disjoint(c.view(c.old, child(x, xp[k], "properties", k), depth+1), c.view(c.new, child(y, ys, "properties", k), depth+1), depth+1) {
			return true
		}
	}
	return false
}

// meet reports whether two value lists share a value.
func meet(a, b []any) bool {
	for _, x := range a {
		for _, y := range b {
			if reflect.DeepEqual(x, y) {
				return true
			}
		}
	}
	return false
}
