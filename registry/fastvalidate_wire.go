package registry

import (
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/flowdrop/gateway/internal/structwire"
)

// FastValidWire evaluates the fast validator (fastvalidate.go) over the wire
// bytes of a google.protobuf.Struct, without decoding them. It returns true
// only when it proves the arguments valid; false means "decode and call
// Validate" (invalid, or not decidable here). It does not allocate.
//
// Not decided on the wire (false): no fast validator for the schema,
// uniqueItems, const/enum values that are arrays or objects, min/max
// properties over an object with a repeated key or more than
// maxWireKeys keys, malformed or unexpected bytes (unknown fields, a Value
// with no or several kinds, invalid UTF-8), nesting deeper than
// structwire.MaxDepth. A repeated map key is otherwise harmless: decoding keeps the
// last value, and every occurrence is checked.
func (e *Entry) FastValidWire(args []byte) bool {
	ok, decided := e.evalWire(args)
	return ok && decided
}

// evalWire is FastValidWire with its two outcomes apart: decided is false
// when the answer could not be determined on the wire (see FastValidWire);
// when decided, ok equals the fast validator's verdict on the decoded args.
func (e *Entry) evalWire(args []byte) (ok, decided bool) {
	if e.fast == nil {
		return false, false
	}
	root := wval{kind: tObject, raw: args}
	// One structural pass first, so the evaluation below (which, like
	// jsonschema, stops looking at values no keyword constrains) never calls
	// undecodable bytes valid.
	if !wellFormed(root, 0) {
		return false, false
	}
	var st wireState
	ok = st.check(e.fast.root, root, 0)
	return ok, !st.unsure
}

// maxWireKeys bounds the quadratic distinct-key count of min/maxProperties.
const maxWireKeys = 64

// wval is a stack view of one Value's wire bytes: raw holds a string's
// bytes, or a Struct's or ListValue's encoded fields.
type wval struct {
	kind uint8
	b    bool
	num  float64
	raw  []byte
}

// str views a string value's bytes without copying; it must not outlive them.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// wireState is evalState for the wire: unsure is set by every check that
// could not be decided, and a result computed with it set is discarded
// (oneOf counts matches, so a conservative false inside it is not a "no").
type wireState struct{ unsure bool }

func (st *wireState) give() bool { st.unsure = true; return false }

// wireKinds maps a Value's kind field number to the t* bit of its JSON type.
var wireKinds = [8]uint8{
	structwire.NullValue:   tNull,
	structwire.NumberValue: tNumber,
	structwire.StringValue: tString,
	structwire.BoolValue:   tBool,
	structwire.StructValue: tObject,
	structwire.ListValue:   tArray,
}

// parseValue reads one Value's bytes; ok is false when they are not exactly
// one well-formed kind. validUTF8 checks a string's UTF-8: wellFormed does,
// and the evaluation after it, over bytes already proved, does not again.
func parseValue(b []byte, validUTF8 bool) (wval, bool) {
	kind, scalar, payload, ok := structwire.ReadValue(b, validUTF8)
	if !ok {
		return wval{}, false
	}
	return wval{kind: wireKinds[kind&7], b: scalar != 0, num: math.Float64frombits(scalar), raw: payload}, true
}

// nextEntry is structwire.NextEntry with bad for !ok.
func nextEntry(b []byte, validUTF8 bool) (key, value, rest []byte, bad bool) {
	key, value, rest, ok := structwire.NextEntry(b, validUTF8)
	return key, value, rest, !ok
}

// nextItem is structwire.NextItem with bad for !ok.
func nextItem(b []byte) (value, rest []byte, bad bool) {
	value, rest, ok := structwire.NextItem(b)
	return value, rest, !ok
}

// check mirrors evalState.check (fastvalidate.go) keyword for keyword.
func (st *wireState) check(n *fnode, v wval, depth int) bool {
	if n.isBool {
		return n.boolVal
	}
	if depth > structwire.MaxDepth {
		return st.give()
	}
	if v.kind == tNumber && !finite(v.num) {
		return false
	}
	if n.types != 0 && n.types&v.kind == 0 &&
		(n.types&tInteger == 0 || v.kind != tNumber || v.num != math.Trunc(v.num)) {
		return false
	}
	if n.hasCnst && !st.eqConst(v, n.cnst) {
		return false
	}
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if st.eqConst(v, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.ref != nil {
		if !st.check(n.ref, v, depth) {
			return false
		}
		if n.refOnly {
			return true
		}
	}
	switch v.kind {
	case tObject:
		if !st.object(n, v.raw, depth) {
			return false
		}
	case tArray:
		if !st.array(n, v.raw, depth) {
			return false
		}
	case tString:
		s := str(v.raw)
		if n.minLen >= 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(s)
			if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(s) {
			return false
		}
	case tNumber:
		x := v.num
		if n.hasMin && x < n.min || n.hasMax && x > n.max ||
			n.hasExMin && x <= n.exMin || n.hasExMax && x >= n.exMax {
			return false
		}
	}
	for _, m := range n.allOf {
		if !st.check(m, v, depth) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		any := false
		for _, m := range n.anyOf {
			if st.check(m, v, depth) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, m := range n.oneOf {
			if st.check(m, v, depth) {
				matched++
			}
		}
		if matched != 1 {
			return false
		}
	}
	if n.safeInt && v.kind == tNumber && v.num == math.Trunc(v.num) && math.Abs(v.num) > MaxSafeInteger {
		return false
	}
	return true
}

func (st *wireState) object(n *fnode, b []byte, depth int) bool {
	if n.minProps >= 0 || n.maxProps >= 0 {
		count, ok := distinctKeys(b)
		if !ok {
			return st.give()
		}
		if n.minProps >= 0 && count < n.minProps || n.maxProps >= 0 && count > n.maxProps {
			return false
		}
	}
	// Required keys are ticked off in the one pass over the entries below
	// (a bit each), rather than one scan of the object per required key.
	var seen uint64
	tick := len(n.required) <= 64
	if !tick {
		for _, r := range n.required {
			if found, ok := hasKey(b, r); !ok {
				return st.give()
			} else if !found {
				return false
			}
		}
	}
	visit := n.props != nil || n.patProps != nil || n.addl != addlNone
	for rest := b; len(rest) > 0; {
		k, raw, next, bad := nextEntry(rest, false)
		if bad {
			return st.give()
		}
		rest = next
		if tick {
			for i, r := range n.required {
				if r == str(k) {
					seen |= 1 << i
				}
			}
		}
		if !visit {
			continue
		}
		pv, ok := parseValue(raw, false)
		if !ok {
			return st.give()
		}
		evaluated := false
		if pn, ok := n.props[string(k)]; ok {
			evaluated = true
			if !st.check(pn, pv, depth+1) {
				return false
			}
		}
		for _, pp := range n.patProps {
			if pp.re.MatchString(str(k)) {
				evaluated = true
				if !st.check(pp.n, pv, depth+1) {
					return false
				}
			}
		}
		if !evaluated {
			switch n.addl {
			case addlFalse:
				return false
			case addlSchema:
				if !st.check(n.addlNode, pv, depth+1) {
					return false
				}
			}
		}
	}
	return !tick || seen == 1<<len(n.required)-1
}

// distinctKeys counts a Struct's keys, refusing (ok false) a repeated key,
// malformed bytes or more than maxWireKeys keys (the check is quadratic).
func distinctKeys(b []byte) (count int, ok bool) {
	for rest := b; len(rest) > 0; {
		k, _, next, bad := nextEntry(rest, false)
		if bad || count == maxWireKeys {
			return 0, false
		}
		if found, ok := hasKey(b[:len(b)-len(rest)], str(k)); !ok || found {
			return 0, false
		}
		count++
		rest = next
	}
	return count, true
}

// hasKey reports whether a Struct's bytes hold key; ok is false when the
// bytes are malformed.
func hasKey(b []byte, key string) (found, ok bool) {
	for len(b) > 0 {
		k, _, next, bad := nextEntry(b, false)
		if bad {
			return false, false
		}
		if string(k) == key {
			return true, true
		}
		b = next
	}
	return false, true
}

func (st *wireState) array(n *fnode, b []byte, depth int) bool {
	if n.unique {
		return st.give() // pairwise equality of encoded values: left to jsonschema
	}
	if n.minItems >= 0 || n.maxItems >= 0 {
		count := 0
		for rest := b; len(rest) > 0; count++ {
			_, next, bad := nextItem(rest)
			if bad {
				return st.give()
			}
			rest = next
		}
		if n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
			return false
		}
	}
	for i, rest := 0, b; len(rest) > 0; i++ {
		raw, next, bad := nextItem(rest)
		if bad {
			return st.give()
		}
		rest = next
		item, ok := parseValue(raw, false)
		if !ok {
			return st.give()
		}
		switch {
		case i < len(n.prefix):
			if !st.check(n.prefix[i], item, depth+1) {
				return false
			}
		case n.rest == addlFalse:
			return false
		case n.rest == addlSchema:
			if !st.check(n.restNode, item, depth+1) {
				return false
			}
		}
	}
	return true
}

// wellFormed checks that a value's bytes decode as exactly what
// proto.Unmarshal would accept and produce: one kind per Value, one key and
// value per entry, valid UTF-8, no unknown fields, bounded depth; and that
// every number is finite.
func wellFormed(v wval, depth int) bool {
	if depth > structwire.MaxDepth || v.kind == tNumber && !finite(v.num) {
		return false // non-finite numbers: Validate refuses them (finite.go)
	}
	switch v.kind {
	case tObject:
		for rest := v.raw; len(rest) > 0; {
			_, raw, next, bad := nextEntry(rest, true)
			if bad {
				return false
			}
			pv, ok := parseValue(raw, true)
			if !ok || !wellFormed(pv, depth+1) {
				return false
			}
			rest = next
		}
	case tArray:
		for rest := v.raw; len(rest) > 0; {
			raw, next, bad := nextItem(rest)
			if bad {
				return false
			}
			item, ok := parseValue(raw, true)
			if !ok || !wellFormed(item, depth+1) {
				return false
			}
			rest = next
		}
	}
	return true
}

// eqConst is eqConst (fastvalidate.go) for scalars; array and object
// constants are not compared on the wire.
func (st *wireState) eqConst(v wval, c any) bool {
	switch c := c.(type) {
	case nil:
		return v.kind == tNull
	case bool:
		return v.kind == tBool && v.b == c
	case string:
		return v.kind == tString && str(v.raw) == c
	case float64:
		return v.kind == tNumber && finite(v.num) && v.num == c
	}
	if (v.kind == tArray || v.kind == tObject) && v.kind == constKind(c) {
		return st.give()
	}
	return false // a scalar never equals an array or object
}

func constKind(c any) uint8 {
	switch c.(type) {
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return 0
}
