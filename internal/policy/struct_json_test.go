package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestAppendStructJSONMatchesProtojson holds AppendStructJSON (what the MCP
// client leg sends as a call's arguments) to protojson.Marshal's bytes,
// compacted (protojson adds random spaces; compaction keeps its strings'
// escapes and its numbers as written): same keys in the same order, same
// escapes — so a request is as long as before, for the send limit — and
// same numbers; and it refuses what protojson refuses.
func TestAppendStructJSONMatchesProtojson(t *testing.T) {
	str := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rows := []struct {
		name, reason string
		args         *structpb.Struct
	}{
		{"empty", "no arguments", &structpb.Struct{}},
		{"nil fields", "a Struct whose map is nil", &structpb.Struct{Fields: nil}},
		{"order", "keys are sorted bytewise, as protojson sorts map keys", str(map[string]any{"b": 1, "a": 2, "B": 3, "é": 4, "a0": 5})},
		{"html", "<, >, & and U+2028/9 are written as they are (encoding/json would escape them)", str(map[string]any{"<k&>": "<script>&\u2028\u2029</script>"})},
		{"controls", "control characters and quotes are escaped as protojson escapes them", str(map[string]any{"s": "\"\\\b\f\n\r\t\x00\x1f\x7f"})},
		{"unicode", "non-ASCII text is written as UTF-8", str(map[string]any{"s": "日本語 ☃ 𝄞"})},
		{"numbers", "integers, fractions and exponents formatted as protojson formats float64",
			str(map[string]any{"i": 42, "neg": -7, "z": 0, "f": 0.1, "big": 1e21, "bigger": 1.5e300, "small": 1e-7, "tiny": 5e-324, "edge": 999999999999999999999.0, "max": math.MaxFloat64, "negzero": math.Copysign(0, -1)})},
		{"nested", "objects and lists inside each other, null and booleans", str(map[string]any{
			"o": map[string]any{"l": []any{1, "x", nil, true, false, map[string]any{}, []any{}}, "n": nil}})},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			want, err := protojson.Marshal(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, want); err != nil {
				t.Fatal(err)
			}
			got, err := AppendStructJSON(nil, tc.args)
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if !bytes.Equal(got, compact.Bytes()) {
				t.Errorf("%s:\n got %s\nwant %s", tc.reason, got, compact.Bytes())
			}
		})
	}
	for _, tc := range []struct {
		name, reason string
		v            *structpb.Value
	}{
		{"nan", "JSON has no NaN", structpb.NewNumberValue(math.NaN())},
		{"inf", "JSON has no infinity", structpb.NewNumberValue(math.Inf(1))},
		{"no kind", "a Value with no kind set", &structpb.Value{}},
		{"bad utf-8", "a string that is not UTF-8", structpb.NewStringValue("a\xffb")},
		{"bad utf-8 key", "a key that is not UTF-8", nil},
	} {
		t.Run("refuses/"+tc.name, func(t *testing.T) {
			args := &structpb.Struct{Fields: map[string]*structpb.Value{"v": tc.v}}
			if tc.v == nil {
				args = &structpb.Struct{Fields: map[string]*structpb.Value{"k\xff": structpb.NewBoolValue(true)}}
			}
			if _, err := protojson.Marshal(args); err == nil {
				t.Fatalf("%s: protojson accepts it; the case is wrong", tc.reason)
			}
			if got, err := AppendStructJSON(nil, args); err == nil {
				t.Errorf("%s: encoded %s; want an error", tc.reason, got)
			}
		})
	}
}

// FuzzAppendStructJSON holds AppendStructJSON to protojson on any Struct
// protojson can read from the input: the same compacted bytes, or both
// refusing (NaN and invalid UTF-8 cannot come from JSON text, so the
// table test above holds the refusals).
func FuzzAppendStructJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1,"b":[true,null,"x"],"c":{"d":-0.5e-7}}`,
		`{"<&>":"\u2028\u2029\u0000\u001f\"\\","日本":"𝄞","n":1e21,"m":123456789012345678901234567890}`,
		`{"z":{"y":{"x":[[[[{}]]]]}},"k":"\t\n\r\b\f"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		var s structpb.Struct
		if protojson.Unmarshal(in, &s) != nil {
			return
		}
		want, werr := protojson.Marshal(&s)
		got, gerr := AppendStructJSON(nil, &s)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("protojson error %v, AppendStructJSON error %v, for %q", werr, gerr, in)
		}
		if werr != nil {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, compact.Bytes()) {
			t.Fatalf("for %q:\n got %s\nwant %s", in, got, compact.Bytes())
		}
	})
}
