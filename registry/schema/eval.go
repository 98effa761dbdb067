package schema

import (
	"context"
	"math"
	"unicode/utf8"
)

// The fast validator's evaluation, written once for both representations of
// arguments. A representation (rep) is what a container value holds: the
// decoded fields or list of a *structpb.Struct (structRep, fast_struct.go)
// or the wire bytes of a Struct's fields or a ListValue's values (wireRep,
// fast_wire.go). Scalars are read into value's own fields, so every
// keyword on them is plain field access; only what needs a container's
// members (object and array keywords, array and object constants) goes to
// the representation, through a type switch on the representation rather
// than a method call on the type parameter, so the call is direct and
// escape analysis sees the callee: nothing allocates.
//
// Everything here must not allocate.

// rep is the set of representations the evaluation reads.
type rep interface{ structRep | wireRep }

// value is a stack view of one argument value: kind is one of the t* bits
// (tNumber for every number); b, num and str hold a scalar; r a decoded
// container (a wire container's bytes are str, see wireRep).
type value[R rep] struct {
	kind uint8
	b    bool
	num  float64
	str  string
	r    R
}

// eval carries what a pure boolean cannot: unsure is set by every check the
// representation could not decide (uniqueItems on a long decoded array, or
// anything the wire bytes leave open), and a result computed with it set is
// discarded (oneOf counts matches, so a conservative false inside it is not
// a "no"). maxDepth bounds the nesting followed before giving up.
//
// steps counts the work (a check, a member or item visited) against
// maxSteps, and ctx is looked at every 1024 steps: once either runs out,
// halt says which and every check gives up, so the evaluation unwinds at
// once. A plain counter in this struct, which lives on the caller's stack:
// the budget costs no allocation and no call. The cost bound Validate
// checks first (cost.go) keeps steps under maxSteps; the count enforces it
// all the same, and is what lets a cancelled call stop.
type eval[R rep] struct {
	unsure   bool
	halt     haltReason
	maxDepth int
	steps    int
	maxSteps int
	ctx      context.Context
}

// haltReason is why an evaluation stopped before its end.
type haltReason uint8

const (
	running haltReason = iota
	haltSteps
	haltContext
)

func (e *eval[R]) give() bool { e.unsure = true; return false }

// tick counts one step; it reports whether the evaluation must stop.
func (e *eval[R]) tick() bool {
	if e.halt != running {
		return true
	}
	e.steps++
	switch {
	case e.steps > e.maxSteps:
		e.halt = haltSteps
	case e.steps&1023 == 0 && e.ctx != nil && e.ctx.Err() != nil:
		e.halt = haltContext
	default:
		return false
	}
	e.unsure = true
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// check mirrors jsonschema's validator.validate for one node. Values go by
// pointer (to the caller's stack): a value is up to seven words, and
// passing it by value through the recursion spills registers at every
// level. Object and array members go to the representation's pass (the
// type switches below), which calls back into check.
func (e *eval[R]) check(n *fnode, v *value[R], depth int) bool {
	if e.tick() {
		return false // unsure: tick set it
	}
	if n.isBool {
		return n.boolVal
	}
	if depth > e.maxDepth {
		return e.give()
	}
	if v.kind == tNumber && !finite(v.num) {
		return false // jsonschema: invalid JSON value
	}
	if n.types != 0 && n.types&v.kind == 0 &&
		(n.types&tInteger == 0 || v.kind != tNumber || v.num != math.Trunc(v.num)) {
		return false
	}
	if n.hasCnst && !e.eqConst(v, n.cnst) {
		return false
	}
	if n.hasEnum {
		found := false
		for _, c := range n.enum {
			if e.eqConst(v, c) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.ref != nil {
		if !e.check(n.ref, v, depth) {
			return false
		}
		if n.refOnly {
			return true
		}
	}
	switch v.kind {
	case tObject:
		if (n.minProps >= 0 || n.maxProps >= 0) && !e.propertyCount(n, v) {
			return false
		}
		// The representation's one pass over the members checks required
		// and each member (memberSchema, patternMember).
		var ok bool
		switch r := any(v.r).(type) {
		case structRep:
			ok = structMembers(any(e).(*eval[structRep]), n, r.fields, depth)
		case wireRep:
			ok = wireMembers(any(e).(*eval[wireRep]), n, raw(v.str), depth)
		}
		if !ok {
			return false
		}
	case tArray:
		if (n.minItems >= 0 || n.maxItems >= 0) && !e.itemCount(n, v) {
			return false
		}
		if n.unique && !e.unique(v) {
			return false
		}
		// The representation's pass over the items checks each against
		// itemSchema.
		var ok bool
		switch r := any(v.r).(type) {
		case structRep:
			ok = structItems(any(e).(*eval[structRep]), n, r.list.GetValues(), depth)
		case wireRep:
			ok = wireItems(any(e).(*eval[wireRep]), n, raw(v.str), depth)
		}
		if !ok {
			return false
		}
	case tString:
		if n.minLen >= 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(v.str)
			if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(v.str) {
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
		if !e.check(m, v, depth) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		matched := false
		for _, m := range n.anyOf {
			if e.check(m, v, depth) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, m := range n.oneOf {
			if e.check(m, v, depth) {
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

// propertyCount applies minProperties and maxProperties.
func (e *eval[R]) propertyCount(n *fnode, v *value[R]) bool {
	count, ok := e.size(v)
	if !ok {
		return e.give()
	}
	return !(n.minProps >= 0 && count < n.minProps || n.maxProps >= 0 && count > n.maxProps)
}

// visitsMembers reports whether any keyword looks at an object's members
// (rather than only at which keys it has).
func (n *fnode) visitsMembers() bool {
	return n.props != nil || n.patProps != nil || n.addl != addlNone
}

// memberSchema is properties and additionalProperties for a member named
// key of a node without patternProperties: the one schema the member must
// satisfy (nil: none), or ok false when it may not be there. The
// representations' passes call it directly and check the member against
// the schema themselves, which spares a call per member in the common case.
func (n *fnode) memberSchema(key string) (m *fnode, ok bool) {
	if pn, found := n.props[key]; found {
		return pn, true
	}
	return n.additionalSchema()
}

// additionalSchema is additionalProperties: the schema a member no other
// keyword covers must satisfy (nil: none), or ok false when it is
// forbidden.
func (n *fnode) additionalSchema() (m *fnode, ok bool) {
	switch n.addl {
	case addlFalse:
		return nil, false
	case addlSchema:
		return n.addlNode, true
	}
	return nil, true
}

// patternMember applies properties, patternProperties and
// additionalProperties to one member of an object at depth, for a node
// with patternProperties (memberSchema covers the others).
func (e *eval[R]) patternMember(n *fnode, key string, v *value[R], depth int) bool {
	evaluated := false
	if pn, ok := n.props[key]; ok {
		evaluated = true
		if !e.check(pn, v, depth+1) {
			return false
		}
	}
	for _, pp := range n.patProps {
		if pp.re.MatchString(key) {
			evaluated = true
			if !e.check(pp.n, v, depth+1) {
				return false
			}
		}
	}
	if evaluated {
		return true
	}
	m, ok := n.additionalSchema()
	return ok && (m == nil || e.check(m, v, depth+1))
}

// size is an object's number of distinct keys; ok is false when the
// representation cannot tell.
func (e *eval[R]) size(v *value[R]) (int, bool) {
	switch r := any(v.r).(type) {
	case structRep:
		return len(r.fields), true
	case wireRep:
		return distinctKeys(raw(v.str))
	}
	panic("unreachable")
}

// itemCount applies minItems and maxItems.
func (e *eval[R]) itemCount(n *fnode, v *value[R]) bool {
	count, ok := e.length(v)
	if !ok {
		return e.give()
	}
	return !(n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems)
}

// unique applies uniqueItems.
func (e *eval[R]) unique(v *value[R]) bool {
	unique, ok := e.uniqueItems(v)
	if !ok {
		return e.give()
	}
	return unique
}

// itemSchema is prefixItems/items/additionalItems (folded into prefix and
// rest) for the item at index i: the schema it must satisfy (nil: none),
// or ok false when no item may be there.
func (n *fnode) itemSchema(i int) (m *fnode, ok bool) {
	switch {
	case i < len(n.prefix):
		return n.prefix[i], true
	case n.rest == addlFalse:
		return nil, false
	case n.rest == addlSchema:
		return n.restNode, true
	}
	return nil, true
}

// length is an array's number of items; ok is false when the
// representation cannot tell.
func (e *eval[R]) length(v *value[R]) (int, bool) {
	switch r := any(v.r).(type) {
	case structRep:
		return len(r.list.GetValues()), true
	case wireRep:
		return countItems(raw(v.str))
	}
	panic("unreachable")
}

// uniqueItems reports whether no two items are equal; ok is false when the
// representation cannot tell.
func (e *eval[R]) uniqueItems(v *value[R]) (unique, ok bool) {
	switch r := any(v.r).(type) {
	case structRep:
		return structUnique(r.list.GetValues())
	case wireRep:
		return false, false // pairwise equality of encoded values: left to jsonschema
	}
	panic("unreachable")
}

// eqConst is jsonschema's equals(instance, schemaValue): numbers compare
// by value (1 == 1.0) and only when finite. Array and object constants go
// to the representation.
func (e *eval[R]) eqConst(v *value[R], c any) bool {
	switch c := c.(type) {
	case nil:
		return v.kind == tNull
	case bool:
		return v.kind == tBool && v.b == c
	case string:
		return v.kind == tString && v.str == c
	case float64:
		return v.kind == tNumber && finite(v.num) && v.num == c
	case []any:
		if v.kind != tArray {
			return false
		}
	case map[string]any:
		if v.kind != tObject {
			return false
		}
	default:
		return false
	}
	switch r := any(v.r).(type) {
	case structRep:
		return structEqConst(any(e).(*eval[structRep]), r, c)
	case wireRep:
		return e.give() // array and object constants are not compared on the wire
	}
	panic("unreachable")
}
