package schema

import (
	"context"
	"math"

	"google.golang.org/protobuf/types/known/structpb"
)

// The decoded representation of the fast validator: arguments as a
// *structpb.Struct. See eval.go for the evaluation itself.

// maxFastUnique bounds the O(n²) uniqueItems scan; longer arrays are left
// to jsonschema (which hashes, allocating).
const maxFastUnique = 64

// structRep is a decoded container: an object's fields or an array's list
// (a pointer rather than its slice keeps value two words smaller).
type structRep struct {
	fields map[string]*structpb.Value
	list   *structpb.ListValue
}

// view reads a *structpb.Value with the kinds jsonschema sees after
// structToMap: a nil or unset Value is null.
func view(v *structpb.Value) value[structRep] {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return value[structRep]{kind: tString, str: k.StringValue}
	case *structpb.Value_NumberValue:
		return value[structRep]{kind: tNumber, num: k.NumberValue}
	case *structpb.Value_BoolValue:
		return value[structRep]{kind: tBool, b: k.BoolValue}
	case *structpb.Value_StructValue:
		return value[structRep]{kind: tObject, r: structRep{fields: k.StructValue.GetFields()}}
	case *structpb.Value_ListValue:
		return value[structRep]{kind: tArray, r: structRep{list: k.ListValue}}
	}
	return value[structRep]{kind: tNull}
}

// valid reports whether args certainly satisfy the schema. false means
// "ask jsonschema", not necessarily "invalid". halt is not nil when the
// evaluation stopped at its budget (*BudgetError) or because ctx ended
// (ctx's error).
func (f *fastSchema) valid(ctx context.Context, args *structpb.Struct, maxSteps int) (ok bool, halt error) {
	e := eval[structRep]{maxDepth: math.MaxInt, maxSteps: maxSteps, ctx: ctx} // decoding bounded the depth already
	root := value[structRep]{kind: tObject, r: structRep{fields: args.GetFields()}}
	ok = e.check(f.root, &root, 0)
	switch e.halt {
	case haltSteps:
		return false, &BudgetError{MaxSteps: maxSteps}
	case haltContext:
		return false, ctx.Err()
	}
	return ok && !e.unsure, nil
}

// structMembers checks required, then each member.
func structMembers(e *eval[structRep], n *fnode, fields map[string]*structpb.Value, depth int) bool {
	for _, r := range n.required {
		if _, ok := fields[r]; !ok {
			return false
		}
	}
	if !n.visitsMembers() {
		return true
	}
	for k, pv := range fields {
		if e.tick() {
			return false
		}
		v := view(pv)
		if n.patProps != nil {
			if !e.patternMember(n, k, &v, depth) {
				return false
			}
			continue
		}
		m, ok := n.memberSchema(k)
		if !ok || m != nil && !e.check(m, &v, depth+1) {
			return false
		}
	}
	return true
}

// structItems checks each item against its itemSchema.
func structItems(e *eval[structRep], n *fnode, list []*structpb.Value, depth int) bool {
	for i, item := range list {
		if e.tick() {
			return false
		}
		m, ok := n.itemSchema(i)
		if !ok {
			return false
		}
		if m == nil {
			continue
		}
		v := view(item)
		if !e.check(m, &v, depth+1) {
			return false
		}
	}
	return true
}

// structUnique is uniqueItems by pairwise comparison, declining (ok false)
// arrays longer than maxFastUnique.
func structUnique(list []*structpb.Value) (unique, ok bool) {
	if len(list) > maxFastUnique {
		return false, false
	}
	for i := 1; i < len(list); i++ {
		for j := 0; j < i; j++ {
			if eqVal(view(list[i]), view(list[j])) {
				return false, true
			}
		}
	}
	return true, true
}

// structEqConst compares a decoded array or object with an array or object
// constant (eqConst has checked that the kinds match).
func structEqConst(e *eval[structRep], r structRep, c any) bool {
	switch c := c.(type) {
	case []any:
		list := r.list.GetValues()
		if len(list) != len(c) {
			return false
		}
		for i, x := range c {
			v := view(list[i])
			if !e.eqConst(&v, x) {
				return false
			}
		}
		return true
	case map[string]any:
		if len(r.fields) != len(c) {
			return false
		}
		for k, x := range c {
			fv, ok := r.fields[k]
			if !ok {
				return false
			}
			if v := view(fv); !e.eqConst(&v, x) {
				return false
			}
		}
		return true
	}
	return false
}

// eqVal is jsonschema's equals between two instance values (uniqueItems).
func eqVal(a, b value[structRep]) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case tNull:
		return true
	case tBool:
		return a.b == b.b
	case tString:
		return a.str == b.str
	case tNumber:
		return finite(a.num) && finite(b.num) && a.num == b.num
	case tArray:
		al, bl := a.r.list.GetValues(), b.r.list.GetValues()
		if len(al) != len(bl) {
			return false
		}
		for i := range al {
			if !eqVal(view(al[i]), view(bl[i])) {
				return false
			}
		}
		return true
	case tObject:
		if len(a.r.fields) != len(b.r.fields) {
			return false
		}
		for k, x := range a.r.fields {
			y, ok := b.r.fields[k]
			if !ok || !eqVal(view(x), view(y)) {
				return false
			}
		}
		return true
	}
	return false
}
