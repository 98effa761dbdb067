package compat

import (
	"math"
	"strconv"
)

// itemSchemas is a schema's array positions: the per-position schemas
// (prefixItems; draft-04..2019-09 "items" as a list) and the schema of
// every later item (items; additionalItems) with their keyword paths.
type itemSchemas struct {
	prefix   []node
	prefixKw string
	rest     node
	restKw   string
	has      bool
}

func itemsOf(s node) itemSchemas {
	m := s.v.(map[string]any)
	is := itemSchemas{rest: node{v: true}, prefixKw: "prefixItems", restKw: "items"}
	if l, ok := m["items"].([]any); ok {
		is.prefixKw, is.restKw, is.has = "items", "additionalItems", true
		for i, x := range l {
			is.prefix = append(is.prefix, child(s, x, "items", strconv.Itoa(i)))
		}
		if r, ok := m["additionalItems"]; ok {
			is.rest = child(s, r, "additionalItems")
		}
		return is
	}
	if l, ok := m["prefixItems"].([]any); ok {
		is.has = true
		for i, x := range l {
			is.prefix = append(is.prefix, child(s, x, "prefixItems", strconv.Itoa(i)))
		}
	}
	if r, ok := m["items"]; ok {
		is.has = true
		is.rest = child(s, r, "items")
	}
	return is
}

// arrays reports the new limits on arrays that refuse arrays the old view
// accepted: sizes, uniqueItems, and every item position's schema.
func (c *comparer) arrays(ov, cj node, a at) {
	om, nm := ov.v.(map[string]any), cj.v.(map[string]any)
	c.minSize(om, nm, "minItems", a)
	c.maxSize(om, nm, "maxItems", a)
	if nm["uniqueItems"] == true && om["uniqueItems"] != true {
		if mx, ok := om["maxItems"].(float64); !ok || mx > 1 {
			c.add(a.path, "uniqueItems", Narrowed, "%s: uniqueItems added (arrays with repeated items were accepted)", a.subject())
		}
	}
	n := itemsOf(cj)
	if !n.has {
		return
	}
	o := itemsOf(ov)
	limit := math.Inf(1)
	if mx, ok := om["maxItems"].(float64); ok {
		limit = mx
	}
	positions := max(len(o.prefix), len(n.prefix))
	for i := 0; i < positions && float64(i) < limit; i++ {
		op, np := o.rest, n.rest
		if i < len(o.prefix) {
			op = o.prefix[i]
		}
		at := a.sub("[]", n.restKw)
		if i < len(n.prefix) {
			np = n.prefix[i]
			at = a.sub("["+strconv.Itoa(i)+"]", n.prefixKw, strconv.Itoa(i))
		}
		c.compare(op, np, at)
	}
	if float64(positions) < limit {
		c.compare(o.rest, n.rest, a.sub("[]", n.restKw))
	}
}
