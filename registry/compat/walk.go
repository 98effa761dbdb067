package compat

import (
	"reflect"
	"slices"
	"strconv"
)

// at is where the walk is: the JSON Pointer of the schema (as walked from
// the root) and the parameter's name for messages ("" at the root,
// "a.b", "tags[]").
type at struct {
	path, name string
	depth      int
}

func (a at) prop(k string) at {
	n := k
	if a.name != "" {
		n = a.name + "." + k
	}
	return at{path: a.path + "/properties/" + escape(k), name: n, depth: a.depth + 1}
}

func (a at) sub(name string, tokens ...string) at {
	p := a.path
	for _, t := range tokens {
		p += "/" + escape(t)
	}
	return at{path: p, name: a.name + name, depth: a.depth + 1}
}

// subject names the schema at a in a message.
func (a at) subject() string {
	if a.name == "" {
		return "the arguments"
	}
	return "parameter `" + a.name + "`"
}

// compare reports how n may refuse a value o accepts, at a.
func (c *comparer) compare(o, n node, a at) {
	c.step(a.depth)
	if b, ok := n.v.(bool); ok {
		if b {
			return
		}
		if ob, ok := o.v.(bool); ok && !ob {
			return
		}
		c.add(a.path, "false", Narrowed, "%s: the schema became false (accepts nothing)", a.subject())
		return
	}
	nm, ok := n.v.(map[string]any)
	if !ok {
		c.add(a.path, "", TooComplex, "breaking: too complex to compare (%s: the new schema is not an object or boolean)", a.subject())
		return
	}
	if len(nm) == 0 {
		return
	}
	switch ov := o.v.(type) {
	case bool:
		if !ov {
			return
		}
		o = node{v: map[string]any{}, loc: o.loc}
	case map[string]any:
	default:
		c.add(a.path, "", TooComplex, "breaking: too complex to compare (%s: the old schema is not an object or boolean)", a.subject())
		return
	}
	if o.loc != "" && n.loc != "" {
		p := pair{o.loc, n.loc}
		if c.active[p] {
			return
		}
		c.active[p] = true
		defer delete(c.active, p)
	}
	if sameNoRef(o.v, n.v) {
		return
	}
	ov := c.view(c.old, o, a.depth)
	if b, ok := ov.v.(bool); ok && !b {
		return // the old schema accepted nothing here
	}
	om := ov.v.(map[string]any)
	if vals, kw, ok := finiteValues(om); ok {
		c.probe(vals, kw, om, n, a)
		return
	}
	conj := c.conjuncts(c.new, n, a.depth)
	// Reached through references, the pair of targets is the one a cycle
	// comes back to.
	if len(conj) == 1 && ov.loc != "" && conj[0].loc != "" && (ov.loc != o.loc || conj[0].loc != n.loc) {
		p := pair{ov.loc, conj[0].loc}
		if c.active[p] {
			return
		}
		c.active[p] = true
		defer delete(c.active, p)
	}
	// An old disjunction the new schema keeps whole is satisfied as it is:
	// the old value matched it. Drop it from the new side before the old
	// one is taken apart branch by branch.
	for _, kw := range []string{"anyOf", "oneOf"} {
		if ob, ok := om[kw]; ok {
			for i, cj := range conj {
				if m, ok := cj.v.(map[string]any); ok && sameNoRef(m[kw], ob) {
					conj[i] = node{v: without(m, kw)}
				}
			}
		}
	}
	if kw, branches := disjunction(om); branches != nil {
		rest := without(om, kw)
		for i, b := range branches {
			bv := c.view(c.old, child(ov, b, kw, strconv.Itoa(i)), a.depth+1)
			if bb, ok := bv.v.(bool); ok && !bb {
				continue
			}
			merged := node{v: merge(rest, bv.v.(map[string]any))}
			if kw == "oneOf" {
				merged.v.(map[string]any)[oneOfMark] = om["oneOf"]
			}
			c.compareConjuncts(merged, n, conj, a)
		}
		return
	}
	c.compareConjuncts(ov, n, conj, a)
}

// oneOfMark carries, in a merged old branch, the oneOf it came from, so a
// new schema with the same oneOf is known to keep its exclusivity.
const oneOfMark = "\x00oneOf"

// compareConjuncts compares the old view ov (no disjunction left, or one
// left in place) with each conjunct of the new schema n.
func (c *comparer) compareConjuncts(ov, n node, conj []node, a at) {
	om := ov.v.(map[string]any)
	if vals, kw, ok := finiteValues(om); ok {
		c.probe(vals, kw, om, n, a)
		return
	}
	c.removed(om, conj, a)
	for _, cj := range conj {
		c.keywords(ov, cj, a)
	}
}

// keywords compares the old view ov with one new conjunct cj, keyword by
// keyword.
func (c *comparer) keywords(ov, cj node, a at) {
	c.step(a.depth)
	om := ov.v.(map[string]any)
	if b, ok := cj.v.(bool); ok {
		if !b {
			c.add(a.path, "false", Narrowed, "%s: the schema became false (accepts nothing)", a.subject())
		}
		return
	}
	nm, ok := cj.v.(map[string]any)
	if !ok {
		c.add(a.path, "", TooComplex, "breaking: too complex to compare (%s: the new schema is not an object or boolean)", a.subject())
		return
	}
	oT := typesOf(om)
	live := oT
	if nT, has := typeSet(nm); has {
		var lost []string
		live = nil
		for _, t := range oT {
			if admits(nT, t) {
				live = append(live, t)
			} else {
				lost = append(lost, t)
			}
		}
		if len(lost) > 0 {
			c.add(a.path, "type", Narrowed, "%s narrowed from %s to %s", a.subject(), typeList(oT), typeList(nT))
		}
	}
	for _, kw := range []string{"enum", "const"} {
		if _, has := nm[kw]; has {
			c.add(a.path, kw, Narrowed, "%s: %s added where any value of %s was accepted", a.subject(), kw, typeList(oT))
		}
	}
	has := func(t string) bool { return slices.Contains(live, t) }
	if has("number") || has("integer") {
		c.numeric(om, nm, a, !has("number"))
	}
	if has("string") {
		c.strings(om, nm, a)
	}
	if has("array") {
		c.arrays(ov, cj, a)
	}
	if has("object") {
		c.objects(ov, cj, a)
	}
	c.composition(ov, cj, a)
	for _, kw := range equalOnly {
		if nv, ok := nm[kw]; ok && !sameNoRef(om[kw], nv) {
			c.add(a.path, kw, Narrowed, "%s: %s added or changed (compared for equality only)", a.subject(), kw)
		}
	}
}

// equalOnly are assertion keywords compared for equality only: any new or
// changed value is reported.
var equalOnly = []string{
	"not", "if", "then", "else", "patternProperties", "propertyNames",
	"dependentRequired", "dependentSchemas", "dependencies", "contains",
	"minContains", "maxContains", "unevaluatedItems", "unevaluatedProperties",
	"contentSchema",
}

// sameNoRef reports whether a and b are equal and hold no reference
// (whose target could differ between the documents).
func sameNoRef(a, b any) bool {
	return reflect.DeepEqual(a, b) && !hasRef(a)
}

func hasRef(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["$ref"]; ok {
			return true
		}
		for _, x := range t {
			if hasRef(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasRef(x) {
				return true
			}
		}
	}
	return false
}

// without is a shallow copy of m without the keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

// disjunction is the old view's anyOf (or else oneOf) branches.
func disjunction(m map[string]any) (string, []any) {
	for _, kw := range []string{"anyOf", "oneOf"} {
		if l, ok := m[kw].([]any); ok {
			return kw, l
		}
	}
	return "", nil
}
