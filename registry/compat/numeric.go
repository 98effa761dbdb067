package compat

import (
	"math"
	"math/big"
	"strconv"
)

// bound is one side's limit on numbers: the value and whether it is
// exclusive.
type bound struct {
	v    float64
	excl bool
}

// numBounds are m's limits on numbers on one side ("minimum", and
// "exclusiveMinimum" as a number; draft-04's boolean exclusiveMinimum
// makes "minimum" exclusive).
func numBounds(m map[string]any, incl, excl string) []bound {
	var out []bound
	exclBool, _ := m[excl].(bool)
	if v, ok := m[incl].(float64); ok {
		out = append(out, bound{v: v, excl: exclBool})
	}
	if v, ok := m[excl].(float64); ok {
		out = append(out, bound{v: v, excl: true})
	}
	return out
}

// numeric reports the new numeric limits that refuse numbers the old
// view accepted. intOnly: the old view admits whole numbers only.
func (c *comparer) numeric(om, nm map[string]any, a at, intOnly bool) {
	c.numericSide(om, nm, a, intOnly, "minimum", "exclusiveMinimum", true)
	c.numericSide(om, nm, a, intOnly, "maximum", "exclusiveMaximum", false)
	if m, ok := nm["multipleOf"].(float64); ok && m > 0 {
		if !multipleOK(om, m, intOnly) {
			was := "none"
			if k, ok := om["multipleOf"].(float64); ok {
				was = fmtNum(k)
			}
			c.add(a.path, "multipleOf", Narrowed, "%s: multipleOf %s refuses numbers accepted before (was %s)", a.subject(), fmtNum(m), was)
		}
	}
}

func (c *comparer) numericSide(om, nm map[string]any, a at, intOnly bool, incl, excl string, lower bool) {
	olds := numBounds(om, incl, excl)
	if intOnly {
		// A whole-number set's bound is the nearest whole number inside it.
		for i, b := range olds {
			switch {
			case lower && b.excl:
				olds[i] = bound{v: math.Floor(b.v) + 1}
			case lower:
				olds[i] = bound{v: math.Ceil(b.v)}
			case b.excl:
				olds[i] = bound{v: math.Ceil(b.v) - 1}
			default:
				olds[i] = bound{v: math.Floor(b.v)}
			}
		}
	}
	for _, nb := range numBounds(nm, incl, excl) {
		ok := false
		for _, ob := range olds {
			// The old bound keeps every accepted number within the new one.
			var within bool
			switch {
			case lower && nb.excl:
				within = ob.v > nb.v || (ob.excl && ob.v >= nb.v)
			case lower:
				within = ob.v >= nb.v
			case nb.excl:
				within = ob.v < nb.v || (ob.excl && ob.v <= nb.v)
			default:
				within = ob.v <= nb.v
			}
			ok = ok || within
		}
		if ok {
			continue
		}
		kw := incl
		if _, isNum := nm[excl].(float64); isNum && nb.excl {
			kw = excl
		}
		verb := "lowered"
		if lower {
			verb = "raised"
		}
		was := "none"
		if len(olds) > 0 {
			was = describeBounds(numBounds(om, incl, excl))
		}
		if len(olds) == 0 {
			verb = "added"
		}
		c.add(a.path, kw, Narrowed, "%s: %s %s to %s (was %s)", a.subject(), kw, verb, fmtNum(nb.v), was)
	}
}

// multipleOK reports whether every number the old view accepts is a
// multiple of m: its own multipleOf is one (a whole multiple of m), or it
// takes whole numbers only and m divides 1.
func multipleOK(om map[string]any, m float64, intOnly bool) bool {
	rm := new(big.Rat).SetFloat64(m)
	if rm == nil {
		return false
	}
	if k, ok := om["multipleOf"].(float64); ok {
		if rk := new(big.Rat).SetFloat64(k); rk != nil && new(big.Rat).Quo(rk, rm).IsInt() {
			return true
		}
	}
	return intOnly && new(big.Rat).Quo(big.NewRat(1, 1), rm).IsInt()
}

func describeBounds(bs []bound) string {
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += ", "
		}
		if b.excl {
			s += "exclusive "
		}
		s += fmtNum(b.v)
	}
	return s
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
