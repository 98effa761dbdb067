package compat

import "strconv"

// stringAssertions are keywords on strings compared for equality: a new
// or changed one may refuse strings accepted before (regular expressions
// and formats are not compared for inclusion).
var stringAssertions = []string{"pattern", "format", "contentEncoding", "contentMediaType"}

// strings reports the new limits on strings that refuse strings the old
// view accepted.
func (c *comparer) strings(om, nm map[string]any, a at) {
	c.minSize(om, nm, "minLength", a)
	c.maxSize(om, nm, "maxLength", a)
	for _, kw := range stringAssertions {
		nv, ok := nm[kw]
		if !ok || sameNoRef(om[kw], nv) {
			continue
		}
		ns, _ := nv.(string)
		if ov, had := om[kw]; had {
			os, _ := ov.(string)
			c.add(a.path, kw, Narrowed, "%s: %s changed from %s to %s", a.subject(), kw, strconv.Quote(os), strconv.Quote(ns))
		} else {
			c.add(a.path, kw, Narrowed, "%s: %s %s added", a.subject(), kw, strconv.Quote(ns))
		}
	}
}
