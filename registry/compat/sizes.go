package compat

// minSize reports a new lower size bound (minLength, minItems,
// minProperties) above the old one (absent: 0).
func (c *comparer) minSize(om, nm map[string]any, kw string, a at) {
	nv, ok := nm[kw].(float64)
	if !ok {
		return
	}
	ov, _ := om[kw].(float64)
	if ov < nv {
		c.add(a.path, kw, Narrowed, "%s: %s raised to %s (was %s)", a.subject(), kw, fmtNum(nv), fmtNum(ov))
	}
}

// maxSize reports a new upper size bound (maxLength, maxItems,
// maxProperties) below the old one (absent: none).
func (c *comparer) maxSize(om, nm map[string]any, kw string, a at) {
	nv, ok := nm[kw].(float64)
	if !ok {
		return
	}
	ov, has := om[kw].(float64)
	switch {
	case !has:
		c.add(a.path, kw, Narrowed, "%s: %s %s added (was unbounded)", a.subject(), kw, fmtNum(nv))
	case ov > nv:
		c.add(a.path, kw, Narrowed, "%s: %s lowered to %s (was %s)", a.subject(), kw, fmtNum(nv), fmtNum(ov))
	}
}
