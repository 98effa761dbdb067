package structwire

import (
	"math"

	"google.golang.org/protobuf/types/known/structpb"
)

// maxDecodeDepth is where DecodeStruct stops and leaves the bytes to
// proto.Unmarshal, whose recursion limit (10,000) then decides.
const maxDecodeDepth = 1000

// DecodeStruct decodes a google.protobuf.Struct's bytes into the message
// proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal gives, for bytes
// the readers here take: every entry one key and one value, every Value
// exactly one kind, valid UTF-8, no unknown fields, at most
// maxDecodeDepth deep. ok is false for anything else — the caller then
// decodes with proto.Unmarshal, which decides what such bytes mean. A
// repeated key keeps its last value, as a map field does.
//
// Written by hand because protobuf's reflective unmarshal of a Struct (map
// entries and oneof wrappers through generic coders) was most of the cost
// of decoding a call's arguments; this one sizes each map and list before
// filling it and allocates a Struct's or list's Values together.
// FuzzDecodeStruct holds it equal to proto.Unmarshal.
func DecodeStruct(b []byte) (s *structpb.Struct, ok bool) {
	return decodeStruct(b, 0)
}

// DecodeValue is DecodeStruct for one Value's bytes.
func DecodeValue(b []byte) (v *structpb.Value, ok bool) {
	v = new(structpb.Value)
	if !decodeValue(v, b, 0) {
		return nil, false
	}
	return v, true
}

func decodeStruct(b []byte, d int) (*structpb.Struct, bool) {
	s := new(structpb.Struct)
	if len(b) == 0 {
		return s, true
	}
	n := 0
	for rest := b; len(rest) > 0; n++ {
		_, _, next, ok := NextEntry(rest, true)
		if !ok {
			return nil, false
		}
		rest = next
	}
	s.Fields = make(map[string]*structpb.Value, n)
	vals := make([]structpb.Value, n) // one allocation for the members' Values
	for i, rest := 0, b; len(rest) > 0; i++ {
		k, vb, next, _ := NextEntry(rest, false) // read above, UTF-8 included
		if !decodeValue(&vals[i], vb, d) {
			return nil, false
		}
		s.Fields[string(k)] = &vals[i]
		rest = next
	}
	return s, true
}

// decodeValue sets v from a Value's bytes.
func decodeValue(v *structpb.Value, b []byte, d int) bool {
	kind, scalar, payload, ok := ReadValue(b, true)
	if !ok {
		return false
	}
	switch kind {
	case NullValue:
		v.Kind = &structpb.Value_NullValue{NullValue: structpb.NullValue(int32(scalar))}
	case NumberValue:
		v.Kind = &structpb.Value_NumberValue{NumberValue: math.Float64frombits(scalar)}
	case StringValue:
		v.Kind = &structpb.Value_StringValue{StringValue: string(payload)}
	case BoolValue:
		v.Kind = &structpb.Value_BoolValue{BoolValue: scalar != 0}
	case StructValue:
		if d >= maxDecodeDepth {
			return false
		}
		s, ok := decodeStruct(payload, d+1)
		if !ok {
			return false
		}
		v.Kind = &structpb.Value_StructValue{StructValue: s}
	default: // ListValue
		if d >= maxDecodeDepth {
			return false
		}
		l, ok := decodeList(payload, d+1)
		if !ok {
			return false
		}
		v.Kind = &structpb.Value_ListValue{ListValue: l}
	}
	return true
}

func decodeList(b []byte, d int) (*structpb.ListValue, bool) {
	l := new(structpb.ListValue)
	if len(b) == 0 {
		return l, true
	}
	n := 0
	for rest := b; len(rest) > 0; n++ {
		_, next, ok := NextItem(rest)
		if !ok {
			return nil, false
		}
		rest = next
	}
	l.Values = make([]*structpb.Value, n)
	vals := make([]structpb.Value, n)
	for i, rest := 0, b; len(rest) > 0; i++ {
		vb, next, _ := NextItem(rest)
		if !decodeValue(&vals[i], vb, d) {
			return nil, false
		}
		l.Values[i] = &vals[i]
		rest = next
	}
	return l, true
}
