package structwire_test

import (
	"math"
	"strings"
	"testing"

	. "github.com/flowdrop/gateway/internal/structwire"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// decodeGeneral is what DecodeStruct must equal: the general path.
func decodeGeneral(b []byte) (*structpb.Struct, error) {
	s := new(structpb.Struct)
	return s, proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, s)
}

func entry(key string, value []byte) []byte {
	var e []byte
	e = protowire.AppendTag(e, EntryKey, protowire.BytesType)
	e = protowire.AppendString(e, key)
	e = protowire.AppendTag(e, EntryValue, protowire.BytesType)
	e = protowire.AppendBytes(e, value)
	var b []byte
	b = protowire.AppendTag(b, StructFields, protowire.BytesType)
	return protowire.AppendBytes(b, e)
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeStructMatchesProtoUnmarshal(t *testing.T) {
	nested, err := structpb.NewStruct(map[string]any{
		"title": "Ember & Oak", "n": 3.5, "ok": true, "none": nil, "neg0": math.Copysign(0, -1),
		"tags": []any{"a", 1.0, []any{}, map[string]any{}, nil},
		"deep": map[string]any{"x": map[string]any{"y": []any{map[string]any{"z": "é"}}}},
		"":     "empty key",
	})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) []byte { return marshal(t, structpb.NewStringValue(s)) }
	rows := []struct {
		name   string
		b      []byte
		fast   bool // DecodeStruct takes it (else it leaves it to proto.Unmarshal)
		reason string
	}{
		{"empty", nil, true, "no fields: an empty Struct"},
		{"nested", marshal(t, nested), true, "every kind, nesting, empty list and struct, an empty key"},
		{"repeated key", append(entry("k", str("first")), entry("k", str("last"))...), true, "a map keeps the last value"},
		{"NaN and infinities", marshal(t, &structpb.Struct{Fields: map[string]*structpb.Value{
			"nan": structpb.NewNumberValue(math.NaN()), "inf": structpb.NewNumberValue(math.Inf(-1))}}), true, "numbers are their IEEE bits"},
		{"other null enum", entry("k", protowire.AppendVarint(protowire.AppendTag(nil, NullValue, protowire.VarintType), 7)), true, "an open enum keeps its number"},
		{"bool from a big varint", entry("k", protowire.AppendVarint(protowire.AppendTag(nil, BoolValue, protowire.VarintType), 300)), true, "any non-zero varint is true"},
		{"kind-less value", entry("k", nil), false, "proto gives a Value with no kind"},
		{"two kinds", entry("k", append(str("a"), marshal(t, structpb.NewBoolValue(true))...)), false, "proto keeps the last of a oneof"},
		{"unknown field", entry("k", append(str("a"), protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)...)), false, "proto drops it (DiscardUnknown)"},
		{"invalid UTF-8", entry("k", []byte{0x1a, 0x01, 0xff}), false, "proto refuses it"},
		{"truncated", func() []byte { b := entry("k", str("abcdef")); return b[:len(b)-2] }(), false, "proto refuses it"},
		{"too deep for the fast path", deepList(1100), false, "proto's recursion limit decides"},
		{"long string", entry("k", str(strings.Repeat("x", 300))), true, "a two-byte length"},
		{"strings sharing a container", marshal(t, mustStruct(t, map[string]any{
			"a": "", "b": "é€𝄞", "c": 1.0, "d": "tail",
			"l": []any{"", "x", nil, "yz", false, "", []any{"in", ""}, map[string]any{"k": "v"}, "last"},
		})), true, "each string its own bytes, empty ones too, cut from one text per container"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got, ok := DecodeStruct(r.b)
			if ok != r.fast {
				t.Fatalf("DecodeStruct ok = %v, want %v (%s)", ok, r.fast, r.reason)
			}
			if !ok {
				return
			}
			want, err := decodeGeneral(r.b)
			if err != nil {
				t.Fatalf("proto.Unmarshal refuses bytes DecodeStruct took: %v (%s)", err, r.reason)
			}
			if !proto.Equal(got, want) {
				t.Errorf("DecodeStruct = %v, proto.Unmarshal = %v (%s)", got, want, r.reason)
			}
		})
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecodeStructAllocations: a container's wrappers and strings are
// allocated together, not one or two allocations per member. The bench
// tool's arguments shape: four strings, a number, a bool and a list of
// five strings.
func TestDecodeStructAllocations(t *testing.T) {
	b := marshal(t, mustStruct(t, map[string]any{
		"title": "Ember & Oak", "owner": "agent-7", "due": "2026-12-03", "body": "lorem ipsum",
		"priority": 3.0, "done": false, "labels": []any{"ops", "release", "staging", "credentials", "weekly"},
	}))
	n := testing.AllocsPerRun(100, func() {
		if _, ok := DecodeStruct(b); !ok {
			t.Fatal("DecodeStruct refused the arguments")
		}
	})
	// Struct, map and its buckets, Values, four wrapper slices, text (keys
	// included); list: ListValue, pointers, Values, wrappers, text.
	const most = 14
	if n > most {
		t.Fatalf("DecodeStruct allocates %.0f times, want at most %d", n, most)
	}
	t.Logf("DecodeStruct allocates %.0f times", n)
}

// deepList is a Struct whose one member nests n lists.
func deepList(n int) []byte {
	v := marshalValue(structpb.NewNullValue())
	for range n {
		var l []byte
		l = protowire.AppendTag(l, ListValues, protowire.BytesType)
		l = protowire.AppendBytes(l, v)
		v = protowire.AppendBytes(protowire.AppendTag(nil, ListValue, protowire.BytesType), l)
	}
	return entry("k", v)
}

func marshalValue(v *structpb.Value) []byte { b, _ := proto.Marshal(v); return b }

// FuzzDecodeStruct: whatever DecodeStruct takes, proto.Unmarshal takes
// too and decodes to an equal message.
func FuzzDecodeStruct(f *testing.F) {
	s, _ := structpb.NewStruct(map[string]any{"a": []any{1.0, "x", nil, true, map[string]any{"b": "c"}}, "b": ""})
	b, _ := proto.Marshal(s)
	f.Add(b)
	f.Add([]byte{})
	f.Add(entry("k", nil))
	f.Add(append(entry("k", []byte{0x1a, 0x01, 'a'}), entry("k", []byte{0x20, 0x01})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), 512)] // see normalize's maxFuzzInput: bounded minimization
		got, ok := DecodeStruct(b)
		if !ok {
			return
		}
		want, err := decodeGeneral(b)
		if err != nil {
			t.Fatalf("DecodeStruct took %x; proto.Unmarshal: %v", b, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("%x: DecodeStruct = %v, proto.Unmarshal = %v", b, got, want)
		}
		// Every other member, and one name absent: DecodeMembers takes
		// what DecodeStruct took and gives those members.
		var names []string
		i := 0
		for k := range want.Fields {
			if i%2 == 0 {
				names = append(names, k)
			}
			i++
		}
		names = append(names, "absent")
		part, ok := DecodeMembers(b, names)
		if !ok {
			t.Fatalf("%x: DecodeMembers refused what DecodeStruct took", b)
		}
		if wantPart := picked(want, names); !proto.Equal(part, wantPart) {
			t.Fatalf("%x: DecodeMembers(%q) = %v, want %v", b, names, part, wantPart)
		}
	})
}

// BenchmarkDecodeStruct: the hand decoder and proto.Unmarshal on a ~1 KiB
// ten-member Struct like the bench tool's arguments.
func BenchmarkDecodeStruct(b *testing.B) {
	s, err := structpb.NewStruct(map[string]any{
		"title": "Ember &amp;amp; Oak", "body": strings.Repeat("lorem ipsum ", 40), "labels": `["a","b","c"]`,
		"priority": 3.0, "done": false, "due": "2026-12-03", "owner": "agent-7", "tags": []any{"x", "y"},
		"meta": map[string]any{"source": "model", "n": 1.0}, "note": nil,
	})
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := proto.Marshal(s)
	b.Run("structwire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := DecodeStruct(raw); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeGeneral(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
