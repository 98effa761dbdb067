package schema

import (
	"context"
	"math"
	"unsafe"

	"github.com/flowdrop/gateway/internal/structwire"
)

// The wire representation of the fast validator: the bytes of a
// google.protobuf.Struct, read with internal/structwire. See eval.go for
// the evaluation itself.

// FastValidWire evaluates the fast validator over the wire bytes of a
// google.protobuf.Struct, without decoding them. It returns true only when
// it proves the arguments valid; false means "decode and call Validate"
// (invalid, or not decidable here). It does not allocate.
//
// Not decided on the wire (false): fast paths off or no fast validator for
// the schema, uniqueItems, const/enum values that are arrays or objects,
// min/max properties over an object with a repeated key or more than
// maxWireKeys keys, malformed or unexpected bytes (unknown fields, a Value
// with no or several kinds, invalid UTF-8), nesting deeper than
// structwire.MaxDepth. A repeated map key is otherwise harmless: decoding
// keeps the last value, and every occurrence is checked.
func (s *Schema) FastValidWire(args []byte) bool {
	return s.FastValidWireWithin(context.Background(), args, DefaultMaxSteps)
}

// FastValidWireWithin is FastValidWire within a step budget (maxSteps; <=
// 0: DefaultMaxSteps) and ctx: arguments whose cost bound is over the
// budget, and an evaluation that ctx ends, are not decided here (false;
// ValidateWithin then says which). It does not allocate.
func (s *Schema) FastValidWireWithin(ctx context.Context, args []byte, maxSteps int) bool {
	ok, decided := s.evalWire(ctx, args, maxSteps)
	return ok && decided
}

// evalWire is FastValidWireWithin with its two outcomes apart: decided is
// false when the answer could not be determined on the wire (see
// FastValidWire); when decided, ok equals the fast validator's verdict on
// the decoded args.
func (s *Schema) evalWire(ctx context.Context, args []byte, maxSteps int) (ok, decided bool) {
	if s.fast == nil {
		return false, false
	}
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	root := value[wireRep]{kind: tObject, str: str(args)}
	// One structural pass first, so the evaluation below (which, like
	// jsonschema, stops looking at values no keyword constrains) never calls
	// undecodable bytes valid; it sums the cost bound as it goes.
	b := wireBound{p: s.cost, max: uint64(maxSteps)}
	if !b.wellFormed(root, 0) {
		return false, false
	}
	e := eval[wireRep]{maxDepth: structwire.MaxDepth, maxSteps: maxSteps, ctx: ctx}
	ok = e.check(s.fast.root, &root, 0)
	return ok, !e.unsure
}

// maxWireKeys bounds the quadratic distinct-key count of min/maxProperties.
const maxWireKeys = 64

// wireRep marks the wire representation. It holds nothing: a wire value's
// bytes — a string's, or a Struct's encoded fields, or a ListValue's
// encoded values — are its str (viewed with raw), which keeps the value
// five words.
type wireRep struct{}

// str views bytes as a string without copying; it must not outlive them.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// raw is the inverse of str: the bytes a wire value's str views.
func raw(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// wireKinds maps a Value's kind field number to the t* bit of its JSON type.
var wireKinds = [8]uint8{
	structwire.NullValue:   tNull,
	structwire.NumberValue: tNumber,
	structwire.StringValue: tString,
	structwire.BoolValue:   tBool,
	structwire.StructValue: tObject,
	structwire.ListValue:   tArray,
}

// wireValue is the value of a Value read with structwire.ReadValue. Every
// field is set whatever the kind (only the kind's are read), which keeps it
// free of branches and small enough to inline: the callers read the Value
// themselves, one call per value rather than two. wellFormed reads with
// UTF-8 checked; the evaluation after it, over bytes already proved, reads
// without.
func wireValue(kind structwire.Kind, scalar uint64, payload []byte) value[wireRep] {
	return value[wireRep]{kind: wireKinds[kind&7], b: scalar != 0, num: math.Float64frombits(scalar), str: str(payload)}
}

// wireMembers ticks off required keys (a bit each, up to 64; beyond, a scan
// of the object per key) in the one pass over the members that also checks
// each member.
func wireMembers(e *eval[wireRep], n *fnode, b []byte, depth int) bool {
	var seen uint64
	tick := len(n.required) <= 64
	if !tick {
		for _, r := range n.required {
			if found, ok := hasKey(b, r); !ok {
				return e.give()
			} else if !found {
				return false
			}
		}
	}
	visit := n.visitsMembers()
	for rest := b; len(rest) > 0; {
		k, vb, next, ok := structwire.NextEntry(rest, false)
		if !ok {
			return e.give()
		}
		rest = next
		if e.tick() {
			return false
		}
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
		kind, scalar, payload, ok := structwire.ReadValue(vb, false)
		if !ok {
			return e.give()
		}
		pv := wireValue(kind, scalar, payload)
		if n.patProps != nil {
			if !e.patternMember(n, str(k), &pv, depth) {
				return false
			}
			continue
		}
		m, ok := n.memberSchema(str(k))
		if !ok || m != nil && !e.check(m, &pv, depth+1) {
			return false
		}
	}
	return !tick || seen == 1<<len(n.required)-1
}

// wireItems checks each item against its itemSchema.
func wireItems(e *eval[wireRep], n *fnode, b []byte, depth int) bool {
	for i, rest := 0, b; len(rest) > 0; i++ {
		ib, next, ok := structwire.NextItem(rest)
		if !ok {
			return e.give()
		}
		rest = next
		if e.tick() {
			return false
		}
		kind, scalar, payload, ok := structwire.ReadValue(ib, false)
		if !ok {
			return e.give()
		}
		item := wireValue(kind, scalar, payload)
		m, ok := n.itemSchema(i)
		if !ok {
			return false
		}
		if m != nil && !e.check(m, &item, depth+1) {
			return false
		}
	}
	return true
}

// countItems counts a ListValue's items; ok is false for malformed bytes.
func countItems(b []byte) (count int, ok bool) {
	for rest := b; len(rest) > 0; count++ {
		_, next, ok := structwire.NextItem(rest)
		if !ok {
			return 0, false
		}
		rest = next
	}
	return count, true
}

// distinctKeys counts a Struct's keys, refusing (ok false) a repeated key,
// malformed bytes or more than maxWireKeys keys (the check is quadratic).
func distinctKeys(b []byte) (count int, ok bool) {
	for rest := b; len(rest) > 0; {
		k, _, next, ok := structwire.NextEntry(rest, false)
		if !ok || count == maxWireKeys {
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
		k, _, next, ok := structwire.NextEntry(b, false)
		if !ok {
			return false, false
		}
		if string(k) == key {
			return true, true
		}
		b = next
	}
	return false, true
}

// wireBound is argsBound (cost.go) on the wire: the cost profile summed
// over the values wellFormed reads. A key repeated on the wire is counted
// each time, so the sum is at least the decoded arguments'.
type wireBound struct {
	p          *costProfile
	steps, max uint64
}

func (b *wireBound) add(n uint64) bool {
	b.steps = add(b.steps, n)
	return b.steps <= b.max
}

// wellFormed checks that a value's bytes decode as exactly what
// proto.Unmarshal would accept and produce: one kind per Value, one key and
// value per entry, valid UTF-8, no unknown fields, bounded depth; that
// every number is finite; and that the cost bound stays within the budget
// (a container costs its level once and once more per member; strings and
// names per 64 bytes too).
func (b *wireBound) wellFormed(v value[wireRep], depth int) bool {
	if depth > structwire.MaxDepth || v.kind == tNumber && !finite(v.num) {
		return false // non-finite numbers: Validate refuses them (finite.go)
	}
	k := b.p.at(depth)
	if !b.add(k) {
		return false
	}
	switch v.kind {
	case tString:
		return b.add(mul(k, stringSteps(len(v.str))))
	case tObject:
		for rest := raw(v.str); len(rest) > 0; {
			name, vb, next, ok := structwire.NextEntry(rest, true)
			if !ok || !b.add(mul(k, 1+stringSteps(len(name)))) {
				return false
			}
			kind, scalar, payload, ok := structwire.ReadValue(vb, true)
			if !ok || !b.wellFormed(wireValue(kind, scalar, payload), depth+1) {
				return false
			}
			rest = next
		}
	case tArray:
		for rest := raw(v.str); len(rest) > 0; {
			ib, next, ok := structwire.NextItem(rest)
			if !ok || !b.add(k) {
				return false
			}
			kind, scalar, payload, ok := structwire.ReadValue(ib, true)
			if !ok || !b.wellFormed(wireValue(kind, scalar, payload), depth+1) {
				return false
			}
			rest = next
		}
	}
	return true
}
