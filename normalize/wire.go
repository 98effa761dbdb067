package normalize

import (
	"bytes"
	"slices"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/structwire"
)

// NeedsRepairWire reports, from the wire bytes of a google.protobuf.Struct
// and without decoding them, whether Apply might repair or skip anything:
// true when a top-level parameter whose schema declares an array or object
// (Declared(name) != "") holds a string, or when any string value at any
// depth would change under entity decoding. It is conservative: malformed
// or unexpected input (unknown fields, a Value with no or several kinds,
// invalid UTF-8, nesting deeper than 100) also reports true, meaning "decode
// and take the full path". It does not allocate.
//
// A string is judged with the same well-formed-reference test Apply uses
// (one decoding pass changes it), not merely by containing '&': plain text
// such as "Ember & Oak" holds no reference and needs no repair.
func (p *Plan) NeedsRepairWire(structBytes []byte) bool {
	b := structBytes
	for len(b) > 0 {
		key, val, rest, ok := structwire.NextEntry(b, true)
		if !ok {
			return true
		}
		b = rest
		if kind, _, s, ok := structwire.ReadValue(val, true); ok && kind == structwire.StringValue {
			if p.candidateBytes(key) {
				return true // decoded or skipped: either way reported
			}
			if p.stringNeedsRepair(s) {
				return true
			}
			continue
		}
		if p.valueNeedsRepair(val, 1) {
			return true
		}
	}
	return false
}

// valueNeedsRepair is NeedsRepairWire below the top level: only entity
// decoding of string leaves applies there.
func (p *Plan) valueNeedsRepair(val []byte, depth int) bool {
	if depth > structwire.MaxDepth {
		return true
	}
	kind, _, payload, ok := structwire.ReadValue(val, true)
	if !ok {
		return true
	}
	switch kind {
	case structwire.StringValue:
		return p.stringNeedsRepair(payload)
	case structwire.StructValue:
		for b := payload; len(b) > 0; {
			_, ev, rest, ok := structwire.NextEntry(b, true)
			if !ok || p.valueNeedsRepair(ev, depth+1) {
				return true
			}
			b = rest
		}
	case structwire.ListValue:
		for b := payload; len(b) > 0; {
			item, rest, ok := structwire.NextItem(b)
			if !ok || p.valueNeedsRepair(item, depth+1) {
				return true
			}
			b = rest
		}
	}
	return false
}

// stringNeedsRepair is entitiesChange for wire bytes (already checked to be
// valid UTF-8). The string view does not outlive the call.
func (p *Plan) stringNeedsRepair(s []byte) bool {
	if bytes.IndexByte(s, '&') < 0 {
		return false
	}
	// One pass changes the value iff Apply's bounded decoding would (every
	// Plan allows at least one pass); wouldChange builds nothing.
	return wouldChange(unsafe.String(unsafe.SliceData(s), len(s)))
}

// candidateBytes is isCandidate for a key given as bytes, without
// converting it to a string (map lookups and comparisons with string(k) do
// not allocate).
func (p *Plan) candidateBytes(k []byte) bool {
	if !p.anyCandidate {
		return false
	}
	if p.useNames {
		for _, n := range p.candNames {
			if len(n) == len(k) && n == string(k) {
				return true
			}
		}
		return false
	}
	if t, ok := p.props[string(k)]; ok {
		return t.candidate() != 0
	}
	var t typeSet
	matched := false
	for _, pt := range p.patterns {
		if pt.re.Match(k) {
			t |= pt.types
			matched = true
		}
	}
	if matched {
		return t.candidate() != 0
	}
	if p.hasAdditional {
		return p.additional.candidate() != 0
	}
	return false
}

// wireMember is one member of a Struct's bytes: its key, its Value's bytes
// and the whole map entry (tag included), which is copied when unchanged.
type wireMember struct{ key, value, entry []byte }

// ApplyWireWithin is ApplyWithin for the wire bytes of a
// google.protobuf.Struct: only the members that need repair are decoded,
// repaired and encoded again; every other member's bytes are copied as they
// are. The repaired Struct's bytes are appended to dst and returned (nil when
// nothing changed: the bytes as sent are the result, as ApplyWithin returns
// its argument), with the same Report and *LimitError ApplyWithin gives for
// the decoded Struct.
//
// taken is false when the bytes hold something this path leaves to
// ApplyWithin on the decoded arguments — a repeated key (decoding keeps the
// last), bytes that do not read as a Struct, a member too deep for the
// decoder — and nothing else is returned then. TestApplyWireEqualsApply
// holds the two paths equal.
func (p *Plan) ApplyWireWithin(dst, structBytes []byte, lim Limits) (out []byte, rep Report, taken bool, err error) {
	var stack [16]wireMember
	members := stack[:0]
	for rest := structBytes; len(rest) > 0; {
		k, v, next, ok := structwire.NextEntry(rest, true)
		if !ok {
			return nil, Report{}, false, nil
		}
		members = append(members, wireMember{key: k, value: v, entry: rest[:len(rest)-len(next)]})
		rest = next
	}
	// Apply walks (and so reports and spends its budget) in key order.
	slices.SortFunc(members, func(a, b wireMember) int { return bytes.Compare(a.key, b.key) })
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].key, members[i].key) {
			return nil, Report{}, false, nil
		}
	}
	var changedStack [16]*structpb.Value
	changed := changedStack[:0]
	if len(members) > len(changedStack) {
		changed = make([]*structpb.Value, 0, len(members))
	}
	changed = changed[:len(members)]
	b := &budget{lim: lim}
	w := walker{p: p, path: make([]byte, 0, 64), budget: b}
	anyChanged := false
	for i, m := range members {
		if !p.memberNeedsRepair(m) {
			continue
		}
		v, ok := structwire.DecodeValue(m.value)
		if !ok {
			return nil, Report{}, false, nil
		}
		w.path = appendToken(w.path[:0], string(m.key))
		// The decoded Value is ours alone, so it is repaired in place.
		nv, ch := w.param(string(m.key), v, true)
		if b.err != nil {
			return nil, w.r, true, b.err
		}
		if ch {
			changed[i], anyChanged = nv, true
		}
	}
	if !anyChanged {
		return nil, w.r, true, nil
	}
	// One growth for the common case: repairs rarely add a quarter.
	out = slices.Grow(dst, len(structBytes)+len(structBytes)/4+64)
	var scratch []byte
	for i, m := range members {
		if changed[i] == nil {
			out = append(out, m.entry...)
			continue
		}
		if scratch, err = (proto.MarshalOptions{}).MarshalAppend(scratch[:0], changed[i]); err != nil {
			return nil, Report{}, false, nil // not encodable here: the decoded path decides
		}
		out = appendEntry(out, m.key, scratch)
	}
	return out, w.r, true, nil
}

// memberNeedsRepair is NeedsRepairWire for one top-level member.
func (p *Plan) memberNeedsRepair(m wireMember) bool {
	if kind, _, s, ok := structwire.ReadValue(m.value, true); ok && kind == structwire.StringValue {
		return p.candidateBytes(m.key) || p.stringNeedsRepair(s)
	}
	return p.valueNeedsRepair(m.value, 1)
}

// appendEntry appends one Struct map entry: key (field 1) and the Value's
// bytes (field 2), as proto.Marshal lays them out.
func appendEntry(b, key, value []byte) []byte {
	n := protowire.SizeTag(structwire.EntryKey) + protowire.SizeBytes(len(key)) +
		protowire.SizeTag(structwire.EntryValue) + protowire.SizeBytes(len(value))
	b = protowire.AppendTag(b, structwire.StructFields, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, structwire.EntryKey, protowire.BytesType)
	b = protowire.AppendBytes(b, key)
	b = protowire.AppendTag(b, structwire.EntryValue, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}
