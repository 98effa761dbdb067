package structwire

import (
	"math"
	"strings"

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
// filling it and allocates a Struct's or list's Values, oneof wrappers and
// strings (keys included) together (members).
// FuzzDecodeStruct holds it equal to proto.Unmarshal.
func DecodeStruct(b []byte) (s *structpb.Struct, ok bool) {
	return decodeStruct(b, 0)
}

// DecodeValue is DecodeStruct for one Value's bytes.
func DecodeValue(b []byte) (v *structpb.Value, ok bool) {
	v = new(structpb.Value)
	if !decodeValue(v, b, 0, nil) {
		return nil, false
	}
	return v, true
}

// members is what one Struct's or list's members need besides their
// Values, allocated together: a slice of oneof wrappers per kind, and the
// Struct's keys and the members' strings back to back in one string (each
// key and string a view of it, in the order the bytes hold them), so n
// string members cost two allocations, not 2n, and a Struct's keys none of
// their own. Sized by a first read of the members (UTF-8 checked there).
type members struct {
	nulls   []structpb.Value_NullValue
	nums    []structpb.Value_NumberValue
	strs    []structpb.Value_StringValue
	bools   []structpb.Value_BoolValue
	structs []structpb.Value_StructValue
	lists   []structpb.Value_ListValue
	text    string
}

// memberCounts tallies a container's members by kind.
type memberCounts struct{ nulls, nums, strs, bools, structs, lists, text int }

func (c *memberCounts) add(vb []byte) bool {
	kind, _, payload, ok := ReadValue(vb, true)
	if !ok {
		return false
	}
	switch kind {
	case NullValue:
		c.nulls++
	case NumberValue:
		c.nums++
	case StringValue:
		c.strs++
		c.text += len(payload)
	case BoolValue:
		c.bools++
	case StructValue:
		c.structs++
	default: // ListValue
		c.lists++
	}
	return true
}

// alloc makes the wrappers (their slices never grow past these counts,
// so the pointers taken into them stay put); the text is filled after.
func (c *memberCounts) alloc() members {
	var m members
	if c.nulls > 0 {
		m.nulls = make([]structpb.Value_NullValue, 0, c.nulls)
	}
	if c.nums > 0 {
		m.nums = make([]structpb.Value_NumberValue, 0, c.nums)
	}
	if c.strs > 0 {
		m.strs = make([]structpb.Value_StringValue, 0, c.strs)
	}
	if c.bools > 0 {
		m.bools = make([]structpb.Value_BoolValue, 0, c.bools)
	}
	if c.structs > 0 {
		m.structs = make([]structpb.Value_StructValue, 0, c.structs)
	}
	if c.lists > 0 {
		m.lists = make([]structpb.Value_ListValue, 0, c.lists)
	}
	return m
}

// stringPayload is a checked member's string bytes, or nil for another kind.
func stringPayload(vb []byte) []byte {
	if kind, _, payload, _ := ReadValue(vb, false); kind == StringValue {
		return payload
	}
	return nil
}

// nextString cuts the next n bytes of the container's text.
func (m *members) nextString(n int) string {
	s := m.text[:n]
	m.text = m.text[n:]
	return s
}

func decodeStruct(b []byte, d int) (*structpb.Struct, bool) {
	s := new(structpb.Struct)
	if len(b) == 0 {
		return s, true
	}
	n := 0
	var c memberCounts
	for rest := b; len(rest) > 0; n++ {
		k, vb, next, ok := NextEntry(rest, true)
		if !ok || !c.add(vb) {
			return nil, false
		}
		c.text += len(k)
		rest = next
	}
	m := c.alloc()
	if c.text > 0 {
		var text strings.Builder
		text.Grow(c.text)
		for rest := b; len(rest) > 0; {
			k, vb, next, _ := NextEntry(rest, false)
			text.Write(k)
			text.Write(stringPayload(vb))
			rest = next
		}
		m.text = text.String()
	}
	s.Fields = make(map[string]*structpb.Value, n)
	vals := make([]structpb.Value, n) // one allocation for the members' Values
	for i, rest := 0, b; len(rest) > 0; i++ {
		k, vb, next, _ := NextEntry(rest, false) // read above, UTF-8 included
		key := m.nextString(len(k))
		if !decodeValue(&vals[i], vb, d, &m) {
			return nil, false
		}
		s.Fields[key] = &vals[i]
		rest = next
	}
	return s, true
}

// decodeValue sets v from a Value's bytes: its wrapper and string from m,
// whose first read checked the bytes, or allocated alone when m is nil.
func decodeValue(v *structpb.Value, b []byte, d int, m *members) bool {
	kind, scalar, payload, ok := ReadValue(b, m == nil)
	if !ok {
		return false
	}
	var s *structpb.Struct
	var l *structpb.ListValue
	switch kind {
	case StructValue:
		if d >= maxDecodeDepth {
			return false
		}
		if s, ok = decodeStruct(payload, d+1); !ok {
			return false
		}
	case ListValue:
		if d >= maxDecodeDepth {
			return false
		}
		if l, ok = decodeList(payload, d+1); !ok {
			return false
		}
	}
	if m == nil { // one Value alone
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
			v.Kind = &structpb.Value_StructValue{StructValue: s}
		default:
			v.Kind = &structpb.Value_ListValue{ListValue: l}
		}
		return true
	}
	switch kind {
	case NullValue:
		m.nulls = append(m.nulls, structpb.Value_NullValue{NullValue: structpb.NullValue(int32(scalar))})
		v.Kind = &m.nulls[len(m.nulls)-1]
	case NumberValue:
		m.nums = append(m.nums, structpb.Value_NumberValue{NumberValue: math.Float64frombits(scalar)})
		v.Kind = &m.nums[len(m.nums)-1]
	case StringValue:
		m.strs = append(m.strs, structpb.Value_StringValue{StringValue: m.nextString(len(payload))})
		v.Kind = &m.strs[len(m.strs)-1]
	case BoolValue:
		m.bools = append(m.bools, structpb.Value_BoolValue{BoolValue: scalar != 0})
		v.Kind = &m.bools[len(m.bools)-1]
	case StructValue:
		m.structs = append(m.structs, structpb.Value_StructValue{StructValue: s})
		v.Kind = &m.structs[len(m.structs)-1]
	default: // ListValue
		m.lists = append(m.lists, structpb.Value_ListValue{ListValue: l})
		v.Kind = &m.lists[len(m.lists)-1]
	}
	return true
}

func decodeList(b []byte, d int) (*structpb.ListValue, bool) {
	l := new(structpb.ListValue)
	if len(b) == 0 {
		return l, true
	}
	n := 0
	var c memberCounts
	for rest := b; len(rest) > 0; n++ {
		vb, next, ok := NextItem(rest)
		if !ok || !c.add(vb) {
			return nil, false
		}
		rest = next
	}
	m := c.alloc()
	if c.text > 0 {
		var text strings.Builder
		text.Grow(c.text)
		for rest := b; len(rest) > 0; {
			vb, next, _ := NextItem(rest)
			text.Write(stringPayload(vb))
			rest = next
		}
		m.text = text.String()
	}
	l.Values = make([]*structpb.Value, n)
	vals := make([]structpb.Value, n)
	for i, rest := 0, b; len(rest) > 0; i++ {
		vb, next, _ := NextItem(rest)
		if !decodeValue(&vals[i], vb, d, &m) {
			return nil, false
		}
		l.Values[i] = &vals[i]
		rest = next
	}
	return l, true
}

// DecodeMembers is DecodeStruct for just the named members of a Struct's
// bytes (a repeated key's last value, as DecodeStruct keeps it): the
// Struct DecodeStruct gives, less every other member, with the picked
// members' wrappers and strings allocated together and the names as keys.
// Keys are compared, not decoded, so only the picked members are read
// through. ok is false for bytes DecodeStruct would refuse in the entries
// or the picked members; the caller then decodes the whole.
func DecodeMembers(b []byte, names []string) (s *structpb.Struct, ok bool) {
	n := 0
	var c memberCounts
	for rest := b; len(rest) > 0; {
		k, vb, next, ok := NextEntry(rest, false)
		if !ok {
			return nil, false
		}
		rest = next
		if _, picked := pickedName(names, k); picked {
			if !c.add(vb) {
				return nil, false
			}
			n++
		}
	}
	s = &structpb.Struct{Fields: make(map[string]*structpb.Value, n)}
	if n == 0 {
		return s, true
	}
	m := c.alloc()
	if c.text > 0 {
		var text strings.Builder
		text.Grow(c.text)
		for rest := b; len(rest) > 0; {
			k, vb, next, _ := NextEntry(rest, false)
			if _, picked := pickedName(names, k); picked {
				text.Write(stringPayload(vb))
			}
			rest = next
		}
		m.text = text.String()
	}
	vals := make([]structpb.Value, n)
	for i, rest := 0, b; len(rest) > 0; {
		k, vb, next, _ := NextEntry(rest, false)
		rest = next
		name, picked := pickedName(names, k)
		if !picked {
			continue
		}
		if !decodeValue(&vals[i], vb, 0, &m) {
			return nil, false
		}
		s.Fields[name] = &vals[i]
		i++
	}
	return s, true
}

// pickedName is the name key equals, if any.
func pickedName(names []string, key []byte) (string, bool) {
	for _, n := range names {
		if string(key) == n {
			return n, true
		}
	}
	return "", false
}
