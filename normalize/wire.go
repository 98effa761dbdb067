package normalize

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flowdrop/gateway/internal/wirescan"
)

// Wire numbers of google.protobuf.Struct, Value and ListValue (struct.proto).
const (
	structFields = 1 // Struct.fields: map<string, Value>, entries {key = 1, value = 2}
	entryKey     = 1
	entryValue   = 2

	valueNull   = 1 // varint
	valueNumber = 2 // fixed64
	valueString = 3 // bytes
	valueBool   = 4 // varint
	valueStruct = 5 // bytes: Struct
	valueList   = 6 // bytes: ListValue

	listValues = 1 // ListValue.values: repeated Value
)

// maxWireDepth bounds the nesting NeedsRepairWire follows; deeper input takes
// the full path (which has its own limits) rather than a long recursion here.
const maxWireDepth = 100

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
		entry, rest, ok := nextBytesField(b, structFields)
		if !ok {
			return true
		}
		b = rest
		key, val, ok := splitEntry(entry)
		if !ok {
			return true
		}
		if kind, s, ok := valueKind(val); ok && kind == valueString {
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

// nextBytesField consumes one length-delimited field numbered want from b
// (a Struct's map entries, a ListValue's values); ok is false for any other
// field, wire type or truncation.
func nextBytesField(b []byte, want protowire.Number) (field, rest []byte, ok bool) {
	num, typ, n := wirescan.ConsumeTag(b)
	if n < 0 || num != want || typ != protowire.BytesType {
		return nil, nil, false
	}
	b = b[n:]
	field, n = wirescan.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, false
	}
	return field, b[n:], true
}

// splitEntry returns a map entry's key and value bytes; ok is false unless
// the entry is exactly one valid UTF-8 key (possibly absent: "") and one value.
func splitEntry(entry []byte) (key, val []byte, ok bool) {
	haveKey, haveVal := false, false
	for len(entry) > 0 {
		num, typ, n := wirescan.ConsumeTag(entry)
		if n < 0 || typ != protowire.BytesType {
			return nil, nil, false
		}
		entry = entry[n:]
		v, n := wirescan.ConsumeBytes(entry)
		if n < 0 {
			return nil, nil, false
		}
		entry = entry[n:]
		switch num {
		case entryKey:
			if haveKey || !utf8.Valid(v) {
				return nil, nil, false
			}
			key, haveKey = v, true
		case entryValue:
			if haveVal {
				return nil, nil, false
			}
			val, haveVal = v, true
		default:
			return nil, nil, false
		}
	}
	return key, val, haveVal
}

// valueKind returns the one kind field a Value's bytes hold and, for a
// bytes-typed kind (string, struct, list), its payload. ok is false for an
// empty Value, several kinds, an unknown field or a wrong wire type.
func valueKind(val []byte) (kind protowire.Number, payload []byte, ok bool) {
	b := val
	num, typ, n := wirescan.ConsumeTag(b)
	if n < 0 {
		return 0, nil, false
	}
	b = b[n:]
	switch {
	case (num == valueNull || num == valueBool) && typ == protowire.VarintType:
		n = protowire.ConsumeFieldValue(num, typ, b)
	case num == valueNumber && typ == protowire.Fixed64Type:
		n = protowire.ConsumeFieldValue(num, typ, b)
	case (num == valueString || num == valueStruct || num == valueList) && typ == protowire.BytesType:
		payload, n = wirescan.ConsumeBytes(b)
		if num == valueString && n >= 0 && !utf8.Valid(payload) {
			return 0, nil, false
		}
	default:
		return 0, nil, false
	}
	if n < 0 || n != len(b) {
		return 0, nil, false // truncated, or a second field follows
	}
	return num, payload, true
}

// valueNeedsRepair is NeedsRepairWire below the top level: only entity
// decoding of string leaves applies there.
func (p *Plan) valueNeedsRepair(val []byte, depth int) bool {
	if depth > maxWireDepth {
		return true
	}
	kind, payload, ok := valueKind(val)
	if !ok {
		return true
	}
	switch kind {
	case valueString:
		return p.stringNeedsRepair(payload)
	case valueStruct:
		b := payload
		for len(b) > 0 {
			entry, rest, ok := nextBytesField(b, structFields)
			if !ok {
				return true
			}
			b = rest
			_, v, ok := splitEntry(entry)
			if !ok || p.valueNeedsRepair(v, depth+1) {
				return true
			}
		}
	case valueList:
		b := payload
		for len(b) > 0 {
			v, rest, ok := nextBytesField(b, listValues)
			if !ok {
				return true
			}
			b = rest
			if p.valueNeedsRepair(v, depth+1) {
				return true
			}
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
