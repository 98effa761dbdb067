package structwire

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzScan: Scan never panics, and agrees with proto.Unmarshal: bytes it
// passes (not malformed, no limit, no kind-less Value) decode, unless a
// string is not UTF-8 (Scan leaves that to decoding); bytes it calls
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
		r := Scan(b, Limits{MaxDepth: 8, MaxStringLength: 16, MaxElements: 16, MaxKeys: 16})
		if r.Malformed || r.Kindless || r.Exceeded != 0 {
			return
		}
		var got structpb.Struct
		if err := (proto.UnmarshalOptions{RecursionLimit: 10000}).Unmarshal(b, &got); err != nil {
			if !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("Scan passed %x, proto.Unmarshal: %v", b, err)
			}
			return
		}
		if r.Canonical && len(got.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("Scan called %x canonical, but it holds unknown fields", b)
		}
	})
}
