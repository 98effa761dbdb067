package structwire

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of struct.proto.
const (
	StructFields protowire.Number = 1 // Struct.fields: map<string, Value>
	EntryKey     protowire.Number = 1 // map entry key
	EntryValue   protowire.Number = 2 // map entry value

	// Value's oneof kind; the Kind of a Value is its field number.
	NullValue   Kind = 1 // varint
	NumberValue Kind = 2 // fixed64
	StringValue Kind = 3 // bytes
	BoolValue   Kind = 4 // varint
	StructValue Kind = 5 // bytes: Struct
	ListValue   Kind = 6 // bytes: ListValue

	ListValues protowire.Number = 1 // ListValue.values: repeated Value
)

// MaxDepth bounds the nesting the wire checks follow; deeper input takes the
// decoding path (which has its own limits) rather than a long recursion.
const MaxDepth = 100

// Kind is the field number of the one kind a Value's bytes hold.
type Kind = protowire.Number

// ReadValue reads one Value's bytes: its kind and, by kind, scalar (the
// varint of a null or bool — a bool is scalar != 0 — or the IEEE 754 bits of
// a number, math.Float64frombits) or payload (a view of a string's bytes, a
// Struct's fields or a ListValue's values). ok is false unless the bytes are
// exactly one well-formed kind field: an empty Value, several kinds, an
// unknown field, a wrong wire type and truncation all fail. A string's
// UTF-8 is checked when checkUTF8 asks (a caller re-reading bytes it already
// checked skips it). The results are plain words rather than a struct so
// they come back in registers.
func ReadValue(b []byte, checkUTF8 bool) (kind Kind, scalar uint64, payload []byte, ok bool) {
	num, typ, n := ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, false
	}
	b = b[n:]
	switch {
	case (num == NullValue || num == BoolValue) && typ == protowire.VarintType:
		scalar, n = protowire.ConsumeVarint(b)
	case num == NumberValue && typ == protowire.Fixed64Type:
		scalar, n = protowire.ConsumeFixed64(b)
	case (num == StringValue || num == StructValue || num == ListValue) && typ == protowire.BytesType:
		payload, n = ConsumeBytes(b)
		if num == StringValue && checkUTF8 && n >= 0 && !utf8.Valid(payload) {
			return 0, 0, nil, false
		}
	default:
		return 0, 0, nil, false
	}
	if n < 0 || n != len(b) { // truncated, or a second field follows
		return 0, 0, nil, false
	}
	return num, scalar, payload, true
}

// NextEntry reads one map entry from a Struct's bytes: its key and value
// bytes and the rest. ok is false unless the entry is exactly one key
// (absent means "", valid UTF-8 when checkUTF8 asks) and one value.
func NextEntry(b []byte, checkUTF8 bool) (key, value, rest []byte, ok bool) {
	num, typ, n := ConsumeTag(b)
	if n < 0 || num != StructFields || typ != protowire.BytesType {
		return nil, nil, nil, false
	}
	entry, m := ConsumeBytes(b[n:])
	if m < 0 {
		return nil, nil, nil, false
	}
	rest = b[n+m:]
	haveKey, haveVal := false, false
	for len(entry) > 0 {
		num, typ, n := ConsumeTag(entry)
		if n < 0 || typ != protowire.BytesType {
			return nil, nil, nil, false
		}
		f, m := ConsumeBytes(entry[n:])
		if m < 0 {
			return nil, nil, nil, false
		}
		entry = entry[n+m:]
		switch {
		case num == EntryKey && !haveKey:
			if checkUTF8 && !utf8.Valid(f) {
				return nil, nil, nil, false
			}
			key, haveKey = f, true
		case num == EntryValue && !haveVal:
			value, haveVal = f, true
		default:
			return nil, nil, nil, false
		}
	}
	return key, value, rest, haveVal
}

// NextItem reads one element from a ListValue's bytes: its Value bytes and
// the rest. ok is false for any other field, wire type or truncation.
func NextItem(b []byte) (value, rest []byte, ok bool) {
	num, typ, n := ConsumeTag(b)
	if n < 0 || num != ListValues || typ != protowire.BytesType {
		return nil, nil, false
	}
	value, m := ConsumeBytes(b[n:])
	if m < 0 {
		return nil, nil, false
	}
	return value, b[n+m:], true
}

// ConsumeTag is protowire.ConsumeTag.
func ConsumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0]-1<<3 < 0x80-1<<3 { // 8 ≤ b[0] < 0x80: field 1–15 in one byte
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// ConsumeBytes is protowire.ConsumeBytes.
func ConsumeBytes(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) { // one-byte length, payload present
		return b[1 : 1+b[0]], 1 + int(b[0])
	}
	return protowire.ConsumeBytes(b)
}
