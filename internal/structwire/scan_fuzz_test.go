package structwire_test

import (
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
	. "github.com/flowdrop/gateway/internal/structwire"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzScan: Scan never panics, and agrees with proto.Unmarshal and the
// decoded-arguments check: bytes it passes that decode (Scan leaves
// malformed bytes and UTF-8 to decoding, which refuses them) are within
// the same limits decoded and hold no kind-less Value; bytes it calls
// canonical decode to a Struct without unknown fields.
func FuzzScan(f *testing.F) {
	s, _ := structpb.NewStruct(map[string]any{"a": []any{1.0, "x", nil, true, map[string]any{"b": "c"}}})
	b, _ := proto.Marshal(s)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00})             // kind-less value
	f.Add([]byte{0x0a, 0x07, 0x0a, 0x01, 'k', 0x12, 0x02, 0x48, 0x01}) // unknown field in a Value
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), 512)] // see normalize's maxFuzzInput: bounded minimization
		lim := policy.Limits{MaxArgumentBytes: 1 << 20, MaxDepth: 8, MaxStringLength: 16, MaxListElements: 16, MaxObjectKeys: 16}
		r := Scan(b, Limits{MaxDepth: lim.MaxDepth, MaxStringLength: lim.MaxStringLength, MaxElements: lim.MaxListElements, MaxKeys: lim.MaxObjectKeys})
		if r.Malformed || r.Kindless || r.Exceeded != 0 {
			return
		}
		var got structpb.Struct
		if (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &got) != nil {
			return
		}
		if err := lim.Check("t", &got); err != nil {
			t.Fatalf("Scan passed %x; decoded: %v", b, err)
		}
		if r.Canonical {
			var keep structpb.Struct
			if proto.Unmarshal(b, &keep) == nil && len(keep.ProtoReflect().GetUnknown()) > 0 {
				t.Fatalf("Scan called %x canonical, but it holds unknown fields", b)
			}
			return
		}
	})
}
