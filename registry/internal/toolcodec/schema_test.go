package toolcodec

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// schemaInputs are stored schemas decodeStruct must read exactly as
// protojson does: accepted alike with equal Structs, or refused alike.
var schemaInputs = []struct {
	raw    string
	reason string
}{
	{`{"type":"object","properties":{"a":{"type":"string","maxLength":256}},"required":["a"]}`, "a plain schema takes the fast path and must be protojson's Struct"},
	{` {"a" : [1, -0, 0.25, 1e21, -1.5e-7, true, false, null, {}, []]} `, "numbers, literals, empty containers and whitespace"},
	{`{"s":"\"\\\/\b\f\n\r\t \u00e9 \u2028 \ud83d\ude00 é"}`, "every escape, a surrogate pair and raw UTF-8"},
	{`{"n":9007199254740993}`, "a number float64 cannot hold exactly: the fast parser refuses it, protojson rounds it"},
	{`{"n":1e400}`, "a number out of float64's range: protojson refuses it"},
	{`{"s":"\ud800"}`, "a lone surrogate escape: the fast parser refuses it; protojson decides"},
	{`{"a":1,"a":2}`, "a duplicate key: refused by both"},
	{`{"a":1} x`, "trailing text after the object"},
	{`[1]`, "not an object: a Struct must be one"},
	{``, "empty input"},
	{`{"a":"` + "\xff" + `"}`, "invalid UTF-8 in a string"},
	{`{"a":01}`, "a leading zero"},
	{`{"a":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`, "deep nesting within both parsers' bounds"},
	{`{"a":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`, "nesting past both parsers' depth bounds"},
}

// TestDecodeStructMatchesProtojson: decodeStruct reads every stored schema
// as protojson.Unmarshal does — the same Struct, or an error exactly when
// protojson errs.
func TestDecodeStructMatchesProtojson(t *testing.T) {
	fast := 0
	for _, c := range schemaInputs {
		checkDecodeStruct(t, []byte(c.raw), c.reason)
		if _, err := normalize.ParseArguments(c.raw, normalize.Limits{}); err == nil {
			fast++
		}
	}
	if fast < 3 {
		// The rows above are meant to exercise the fast path too.
		t.Fatalf("only %d rows took the fast path", fast)
	}
}

func checkDecodeStruct(t *testing.T, raw []byte, reason string) {
	t.Helper()
	want := &structpb.Struct{}
	wantErr := protojson.Unmarshal(raw, want)
	got, err := decodeStruct(raw)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%q (%s): error %v, protojson's %v", raw, reason, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%q (%s): error %q, protojson's %q", raw, reason, err, wantErr)
		}
	case !proto.Equal(got, want):
		t.Fatalf("%q (%s): decoded %v, protojson %v", raw, reason, got, want)
	}
}

// FuzzDecodeStruct holds decodeStruct equal to protojson on any input.
func FuzzDecodeStruct(f *testing.F) {
	for _, c := range schemaInputs {
		if len(c.raw) < 1000 {
			f.Add([]byte(c.raw))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<16 {
			return // bounded work a case
		}
		checkDecodeStruct(t, raw, "fuzz")
	})
}

func BenchmarkDecodeStruct(b *testing.B) {
	raw, err := compactStruct(nestedSchema(&testing.T{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protojson", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if err := protojson.Unmarshal(raw, &structpb.Struct{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeStruct", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := decodeStruct(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
