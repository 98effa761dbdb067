package structwire

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

func decodedHasNull(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return true
	case *structpb.Value_StructValue:
		for _, f := range k.StructValue.GetFields() {
			if decodedHasNull(f) {
				return true
			}
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if decodedHasNull(e) {
				return true
			}
		}
	}
	return false
}

// TestHasNull: HasNull answers exactly as a walk of the decoded Struct for
// every encoded Struct, and on mutated bytes it never says "no null" for
// bytes that decode to a Struct holding one (it may say "look" for bytes
// it cannot read).
func TestHasNull(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for range rapid.IntRange(0, 4).Draw(rt, "members") {
			s.Fields[rapid.String().Draw(rt, "key")] = drawValue(rt, 1)
		}
		b, err := proto.Marshal(s)
		if err != nil {
			rt.Fatal(err)
		}
		want := decodedHasNull(structpb.NewStructValue(s))
		if got := HasNull(b); got != want {
			rt.Fatalf("HasNull %v, the decoded Struct %v: %v", got, want, s)
		}
		if len(b) == 0 {
			return
		}
		i := rapid.IntRange(0, len(b)-1).Draw(rt, "at")
		b[i] = rapid.Byte().Draw(rt, "byte")
		var m structpb.Struct
		if !HasNull(b) && proto.Unmarshal(b, &m) == nil && decodedHasNull(structpb.NewStructValue(&m)) {
			rt.Fatalf("HasNull says no null in bytes that decode to %v", &m)
		}
	})
}

func TestHasNullAllocatesNothing(t *testing.T) {
	s, _ := structpb.NewStruct(map[string]any{"a": "x", "o": map[string]any{"l": []any{1, "two", map[string]any{"n": nil}}}})
	b, _ := proto.Marshal(s)
	if allocs := testing.AllocsPerRun(100, func() { HasNull(b) }); allocs != 0 || !HasNull(b) {
		t.Errorf("%v allocations, found the deep null: %v", allocs, HasNull(b))
	}
}
