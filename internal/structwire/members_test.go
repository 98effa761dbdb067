package structwire_test

import (
	"math"
	"testing"

	. "github.com/flowdrop/gateway/internal/structwire"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// picked is the Struct DecodeMembers must equal: the whole decoded, less
// every member not named.
func picked(s *structpb.Struct, names []string) *structpb.Struct {
	out := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, n := range names {
		if v, ok := s.Fields[n]; ok {
			out.Fields[n] = v
		}
	}
	return out
}

// TestDecodeMembersMatchesDecodeStruct: DecodeMembers gives exactly the
// named members DecodeStruct (held equal to proto.Unmarshal) gives, for
// bytes of every kind and for names present, absent, repeated and empty;
// and refuses what DecodeStruct refuses in a picked member.
func TestDecodeMembersMatchesDecodeStruct(t *testing.T) {
	whole := marshal(t, mustStruct(t, map[string]any{
		"title": "Ember & Oak", "n": 3.5, "ok": true, "none": nil, "neg0": math.Copysign(0, -1), "": "empty key",
		"labels": []any{"ops", "", "é€𝄞", 1.0, nil, []any{"in"}, map[string]any{"k": "v"}},
		"deep":   map[string]any{"x": map[string]any{"y": []any{map[string]any{"z": "é"}}}},
	}))
	str := func(s string) []byte { return marshal(t, structpb.NewStringValue(s)) }
	rows := []struct {
		reason string
		b      []byte
		names  []string
		ok     bool
		want   []byte // what the picked members decode from, when not b
	}{
		{"no names", whole, nil, true, nil},
		{"one string", whole, []string{"title"}, true, nil},
		{"the bench rule's members", whole, []string{"title", "labels"}, true, nil},
		{"every kind", whole, []string{"n", "ok", "none", "neg0", "labels", "deep", "title"}, true, nil},
		{"an absent name stays absent", whole, []string{"missing", "title"}, true, nil},
		{"the empty key", whole, []string{""}, true, nil},
		{"a name given twice", whole, []string{"title", "title"}, true, nil},
		{"a repeated key keeps its last value", append(entry("k", str("first")), entry("k", str("last"))...), []string{"k"}, true, nil},
		{"empty bytes", nil, []string{"k"}, true, nil},
		{"a bad member not picked is not read", append(entry("bad", []byte{0x1a, 0x01, 0xff}), entry("k", str("v"))...), []string{"k"}, true, entry("k", str("v"))},
		{"a bad picked member is refused", append(entry("bad", []byte{0x1a, 0x01, 0xff}), entry("k", str("v"))...), []string{"bad"}, false, nil},
		{"a kind-less picked member is refused", entry("k", nil), []string{"k"}, false, nil},
		{"truncated entries are refused", whole[:len(whole)-3], []string{"title"}, false, nil},
		{"too deep for the fast path is refused", deepList(1100), []string{"k"}, false, nil},
	}
	for _, r := range rows {
		t.Run(r.reason, func(t *testing.T) {
			got, ok := DecodeMembers(r.b, r.names)
			if ok != r.ok {
				t.Fatalf("DecodeMembers ok = %v, want %v", ok, r.ok)
			}
			if !ok {
				return
			}
			from := r.b
			if r.want != nil {
				from = r.want
			}
			all, err := decodeGeneral(from)
			if err != nil {
				t.Fatalf("proto.Unmarshal refuses bytes DecodeMembers took: %v", err)
			}
			if want := picked(all, r.names); !proto.Equal(got, want) {
				t.Errorf("DecodeMembers = %v, want %v", got, want)
			}
		})
	}
}

// TestDecodeMembersAllocations: the bench rule's members (a string and a
// list of five strings) share their wrappers and strings.
func TestDecodeMembersAllocations(t *testing.T) {
	b := marshal(t, mustStruct(t, map[string]any{
		"title": "Ember & Oak", "owner": "agent-7", "due": "2026-12-03", "body": "lorem ipsum",
		"priority": 3.0, "done": false, "labels": []any{"ops", "release", "staging", "credentials", "weekly"},
	}))
	names := []string{"title", "labels"}
	n := testing.AllocsPerRun(100, func() {
		if _, ok := DecodeMembers(b, names); !ok {
			t.Fatal("DecodeMembers refused the arguments")
		}
	})
	// Struct, map and its group, Values, two wrapper slices, text; list:
	// ListValue, pointers, Values, wrappers, text.
	const most = 12
	if n > most {
		t.Fatalf("DecodeMembers allocates %.0f times, want at most %d", n, most)
	}
	t.Logf("DecodeMembers allocates %.0f times", n)
}
