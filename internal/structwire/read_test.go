package structwire

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

func drawValue(t *rapid.T, depth int) *structpb.Value {
	max := 5
	if depth >= 2 {
		max = 3
	}
	switch rapid.IntRange(0, max).Draw(t, "kind") {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewBoolValue(rapid.Bool().Draw(t, "bool"))
	case 2:
		return structpb.NewNumberValue(rapid.Float64().Draw(t, "num"))
	case 3:
		return structpb.NewStringValue(rapid.String().Draw(t, "str"))
	case 4:
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for range rapid.IntRange(0, 3).Draw(t, "fields") {
			s.Fields[rapid.String().Draw(t, "key")] = drawValue(t, depth+1)
		}
		return structpb.NewStructValue(s)
	default:
		l := &structpb.ListValue{}
		for range rapid.IntRange(0, 3).Draw(t, "items") {
			l.Values = append(l.Values, drawValue(t, depth+1))
		}
		return structpb.NewListValue(l)
	}
}

// walk reads a Value's bytes with the readers and rebuilds it; ok is false
// where a reader refuses.
func walk(b []byte, depth int) (*structpb.Value, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	kind, scalar, payload, ok := ReadValue(b, true)
	if !ok {
		return nil, false
	}
	switch kind {
	case NullValue:
		return structpb.NewNullValue(), true
	case BoolValue:
		return structpb.NewBoolValue(scalar != 0), true
	case NumberValue:
		return structpb.NewNumberValue(math.Float64frombits(scalar)), true
	case StringValue:
		return structpb.NewStringValue(string(payload)), true
	case StructValue:
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for rest := payload; len(rest) > 0; {
			k, raw, next, ok := NextEntry(rest, true)
			if !ok {
				return nil, false
			}
			fv, ok := walk(raw, depth+1)
			if !ok {
				return nil, false
			}
			s.Fields[string(k)] = fv
			rest = next
		}
		return structpb.NewStructValue(s), true
	case ListValue:
		l := &structpb.ListValue{}
		for rest := payload; len(rest) > 0; {
			raw, next, ok := NextItem(rest)
			if !ok {
				return nil, false
			}
			iv, ok := walk(raw, depth+1)
			if !ok {
				return nil, false
			}
			l.Values = append(l.Values, iv)
			rest = next
		}
		return structpb.NewListValue(l), true
	}
	return nil, false
}

// TestReadersAgreeWithUnmarshal: the readers accept every encoded Value and
// rebuild exactly what proto.Unmarshal decodes; on mutated bytes, whatever
// they accept, proto.Unmarshal accepts too and decodes to the same value
// (a repeated map key aside, which both resolve to the last occurrence).
func TestReadersAgreeWithUnmarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		v := drawValue(rt, 0)
		b, err := proto.Marshal(v)
		if err != nil {
			rt.Fatal(err)
		}
		if rapid.Bool().Draw(rt, "mutate") && len(b) > 0 {
			i := rapid.IntRange(0, len(b)-1).Draw(rt, "at")
			switch rapid.IntRange(0, 2).Draw(rt, "how") {
			case 0:
				b[i] = rapid.Byte().Draw(rt, "byte")
			case 1:
				b = b[:i]
			default:
				b = append(b[:i:i], append([]byte{rapid.Byte().Draw(rt, "ins")}, b[i:]...)...)
			}
		}
		got, ok := walk(b, 0)
		var want structpb.Value
		err = proto.Unmarshal(b, &want)
		if !ok {
			return // refusing is always allowed: the caller decodes instead
		}
		if err != nil {
			rt.Fatalf("readers accept bytes proto.Unmarshal refuses (%v): % x", err, b)
		}
		nullAsNull(&want)
		if !proto.Equal(got, &want) && !hasNaN(&want) {
			rt.Fatalf("readers rebuild %v, proto.Unmarshal decodes %v", got, &want)
		}
	})
}

// nullAsNull sets every null_value to NULL_VALUE: the enum's other numbers
// decode as unknown enum values, and a Value of kind null is null whatever
// its number (the readers report the kind only).
func nullAsNull(v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		k.NullValue = structpb.NullValue_NULL_VALUE
	case *structpb.Value_StructValue:
		for _, f := range k.StructValue.GetFields() {
			nullAsNull(f)
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			nullAsNull(e)
		}
	}
}

func hasNaN(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return math.IsNaN(k.NumberValue)
	case *structpb.Value_StructValue:
		for _, f := range k.StructValue.GetFields() {
			if hasNaN(f) {
				return true
			}
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if hasNaN(e) {
				return true
			}
		}
	}
	return false
}

func TestReadValueRefuses(t *testing.T) {
	str := func(s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), s)
	}
	num := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0)
	for _, tc := range []struct {
		reason string
		b      []byte
	}{
		{"an empty Value has no kind", nil},
		{"two kinds", append(str("x"), num...)},
		{"an unknown field", protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 1)},
		{"a string with a varint wire type", protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1)},
		{"invalid UTF-8", str("\xff")},
		{"truncated", str("abc")[:3]},
	} {
		if _, _, _, ok := ReadValue(tc.b, true); ok {
			t.Errorf("%s: ReadValue accepted % x", tc.reason, tc.b)
		}
	}
	if _, _, p, ok := ReadValue(str("\xff"), false); !ok || !bytes.Equal(p, []byte("\xff")) {
		t.Error("without checkUTF8, a string's bytes are returned as they are")
	}
	entry := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Join(fields, nil))
	}
	key := func(k string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
	}
	val := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), num)
	for _, tc := range []struct {
		reason string
		b      []byte
		ok     bool
	}{
		{"key and value", entry(key("k"), val), true},
		{"an absent key is the empty key", entry(val), true},
		{"no value", entry(key("k")), false},
		{"two keys", entry(key("a"), key("b"), val), false},
		{"two values", entry(key("a"), val, val), false},
		{"invalid UTF-8 key", entry(key("\xff"), val), false},
		{"not field 1", protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), append(key("k"), val...)), false},
	} {
		if _, _, _, ok := NextEntry(tc.b, true); ok != tc.ok {
			t.Errorf("%s: NextEntry ok=%v, want %v", tc.reason, ok, tc.ok)
		}
	}
}
