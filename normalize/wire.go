package normalize

import (
	"bytes"
	"unsafe"

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
