package compat

import (
	"regexp"
	"slices"
	"sort"
)

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// requiredSet is m's "required" names.
func requiredSet(m map[string]any) map[string]bool {
	l, _ := m["required"].([]any)
	out := make(map[string]bool, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}

// removed reports the properties the old view declares that no conjunct
// of the new schema declares any more (judged once over all conjuncts:
// allOf may spread the properties over several). Only where the new
// schema still takes objects: otherwise the type change says it all.
func (c *comparer) removed(om map[string]any, conj []node, a at) {
	oProps, _ := om["properties"].(map[string]any)
	if len(oProps) == 0 || !slices.Contains(typesOf(om), "object") {
		return
	}
	declared := map[string]bool{}
	for _, cj := range conj {
		m, ok := cj.v.(map[string]any)
		if !ok {
			return
		}
		if ts, has := typeSet(m); has && !slices.Contains(ts, "object") {
			return
		}
		if _, ok := m["anyOf"]; ok {
			return // the branches are compared whole (composition)
		}
		if _, ok := m["oneOf"]; ok {
			return
		}
		p, _ := m["properties"].(map[string]any)
		for k := range p {
			declared[k] = true
		}
	}
	for _, k := range sortedKeys(oProps) {
		if !declared[k] {
			at := a.prop(k)
			c.out = append(c.out, Finding{Path: at.path, Keyword: "properties", Kind: Removed, Message: "parameter `" + at.name + "` was removed"})
		}
	}
}

// objects reports the new limits on objects that refuse objects the old
// view accepted: newly required names, each property's schema, the
// schema of other keys, and the sizes.
func (c *comparer) objects(ov, cj node, a at) {
	om, nm := ov.v.(map[string]any), cj.v.(map[string]any)
	oReq := requiredSet(om)
	for _, k := range sortedKeys(boolsToAny(requiredSet(nm))) {
		if !oReq[k] {
			at := a.prop(k)
			c.out = append(c.out, Finding{Path: at.path, Keyword: "required", Kind: NewlyRequired, Message: "parameter `" + at.name + "` is newly required"})
		}
	}
	c.minSize(om, nm, "minProperties", a)
	c.maxSize(om, nm, "maxProperties", a)

	oProps, _ := om["properties"].(map[string]any)
	nProps, _ := nm["properties"].(map[string]any)
	for _, k := range sortedKeys(nProps) {
		np := child(cj, nProps[k], "properties", k)
		if x, ok := oProps[k]; ok {
			c.compare(child(ov, x, "properties", k), np, a.prop(k))
			continue
		}
		// A key the old schema did not declare: what it accepted there,
		// if it said (a pattern's schema, an explicit additionalProperties).
		if os, ok := c.otherKey(ov, k, a); ok {
			c.compare(os, np, a.prop(k))
		}
	}

	nAdd, has := nm["additionalProperties"]
	if !has || nAdd == true || isEmptyMap(nAdd) {
		return
	}
	at := a.sub(".*", "additionalProperties")
	oAdd, had := om["additionalProperties"]
	if !had {
		what := "a schema"
		if nAdd == false {
			what = "false"
		}
		c.add(a.path, "additionalProperties", Narrowed, "%s: additionalProperties %s added: keys not declared were accepted before", a.subject(), what)
		return
	}
	c.compare(child(ov, oAdd, "additionalProperties"), child(cj, nAdd, "additionalProperties"), at)
	// Keys the old schema declared that this conjunct does not are
	// checked against its additionalProperties (allOf's classic trap).
	nPat, _ := nm["patternProperties"].(map[string]any)
	for _, k := range sortedKeys(oProps) {
		if _, ok := nProps[k]; ok || matchesAny(nPat, k) {
			continue
		}
		c.compare(child(ov, oProps[k], "properties", k), child(cj, nAdd, "additionalProperties"), a.prop(k))
	}
	// So are keys the old patternProperties accepted, unless the new
	// conjunct keeps the same patterns.
	if oPat, ok := om["patternProperties"].(map[string]any); ok && !sameNoRef(oPat, nm["patternProperties"]) {
		for _, p := range sortedKeys(oPat) {
			c.compare(child(ov, oPat[p], "patternProperties", p), child(cj, nAdd, "additionalProperties"), at)
		}
	}
}

// otherKey is the old view's schema for a key it does not declare: the
// schema of a patternProperties entry that matches it, or an explicit
// additionalProperties. ok is false when the old schema said nothing
// (such keys are not part of its contract). A pattern Go cannot compile
// might match: too complex.
func (c *comparer) otherKey(ov node, k string, a at) (node, bool) {
	om := ov.v.(map[string]any)
	if pats, ok := om["patternProperties"].(map[string]any); ok {
		for _, p := range sortedKeys(pats) {
			re, err := regexp.Compile(p)
			if err != nil {
				panic(errTooComplex{"patternProperties " + p + " is not a regular expression Go can match"})
			}
			if re.MatchString(k) {
				return child(ov, pats[p], "patternProperties", p), true
			}
		}
	}
	if add, ok := om["additionalProperties"]; ok {
		return child(ov, add, "additionalProperties"), true
	}
	return node{}, false
}

func matchesAny(pats map[string]any, k string) bool {
	for p := range pats {
		if re, err := regexp.Compile(p); err == nil && re.MatchString(k) {
			return true
		}
	}
	return false
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

func boolsToAny(m map[string]bool) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
