package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

// TestFastValidWireAgrees: for random schemas and near-valid instances (the
// generators of fast_test.go), evaluating the wire bytes gives the
// fast validator's verdict whenever it decides, and never accepts what
// jsonschema (Validate) refuses.
func TestFastValidWireAgrees(t *testing.T) {
	var instances, decided, accepted int
	rapid.Check(t, func(rt *rapid.T) {
		root, draft := rootSchema(rt)
		doc, err := structpb.NewStruct(root)
		if err != nil {
			rt.Fatalf("schema to structpb: %v", err)
		}
		e, cerr := Compile(doc)
		if cerr != nil {
			return
		}
		ig := newInstGen(rt, root, draft)
		for range 20 {
			args := ig.args(root)
			b, err := proto.MarshalOptions{Deterministic: rapid.Bool().Draw(rt, "det")}.Marshal(args)
			if err != nil {
				rt.Fatal(err)
			}
			instances++
			ok, dec := e.evalWire(context.Background(), b, DefaultMaxSteps)
			if dec {
				decided++
				if want := e.fast != nil && validFast(e.fast, args); ok != want {
					rt.Fatalf("wire verdict %v, fast validator %v\nschema: %s\nargs: %s", ok, want, mustJSON(root), protoJSON(args))
				}
			}
			if e.FastValidWire(b) {
				accepted++
				if v := e.Validate(args, nil); v != nil {
					rt.Fatalf("UNSOUND: FastValidWire accepts what Validate refuses (%v)\nschema: %s\nargs: %s", v, mustJSON(root), protoJSON(args))
				}
			}
		}
	})
	t.Logf("instances=%d decided on the wire=%d accepted=%d", instances, decided, accepted)
	if accepted == 0 {
		t.Error("FastValidWire never accepted: the test is not exercising the fast path")
	}
}

// TestFastValidWireBytes: malformed or unexpected bytes are never accepted,
// and a repeated key is judged by all of its values.
func TestFastValidWireBytes(t *testing.T) {
	e := fastEntry(t, `{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"}},"maxProperties":3}`)
	entry := func(key string, val []byte) []byte {
		var en []byte
		en = protowire.AppendTag(en, 1, protowire.BytesType)
		en = protowire.AppendString(en, key)
		en = protowire.AppendTag(en, 2, protowire.BytesType)
		en = protowire.AppendBytes(en, val)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), en)
	}
	str := func(s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), s)
	}
	num := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0x3ff0000000000000) // 1.0
	good := append(entry("n", num), entry("s", str("x"))...)
	tests := []struct {
		name   string
		b      []byte
		want   bool
		reason string
	}{
		{"valid", good, true, "a number and a string, as declared"},
		{"empty", nil, true, "{} satisfies a schema without required"},
		{"wrong type", entry("n", str("1")), false, "a string where a number is declared"},
		{"truncated", good[:len(good)-1], false, "truncated bytes never decode"},
		{"unknown struct field", append(good, protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 1)...), false,
			"Struct has no field 7: leave it to the decoder"},
		{"two kinds", entry("s", append(str("x"), num...)), false, "a Value with two kinds decodes to the last: not judged on the wire"},
		{"empty value", entry("s", nil), false, "a Value without a kind"},
		{"bad utf8", entry("s", str("\xff")), false, "invalid UTF-8 fails proto3 decoding"},
		{"bad utf8 unconstrained", entry("zz", str("\xff")), false, "even where no keyword looks"},
		{"repeated key both ok", append(entry("s", str("a")), entry("s", str("b"))...), false,
			"maxProperties needs the distinct key count: a repeated key is not counted on the wire"},
	}
	for _, tc := range tests {
		if got := e.FastValidWire(tc.b); got != tc.want {
			t.Errorf("%s: FastValidWire = %v, want %v (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
	// Without maxProperties a repeated key is fine when every value is valid,
	// and refused when one is not (decoding keeps the last, but we cannot
	// know which the checker would see without ordering rules).
	e2 := fastEntry(t, `{"type":"object","properties":{"s":{"type":"string"}}}`)
	if !e2.FastValidWire(append(entry("s", str("a")), entry("s", str("b"))...)) {
		t.Error("repeated key with valid values: want accepted")
	}
	if e2.FastValidWire(append(entry("s", num), entry("s", str("b"))...)) {
		t.Error("repeated key with an invalid value: want refused")
	}
	if e3 := fastEntry(t, `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`); e3.FastValidWire(mustMarshal(t, `{"a":[1,2]}`)) {
		t.Error("uniqueItems is not decided on the wire: want false")
	}
}

// TestFastValidWireRequired: required keys are ticked off in the one pass
// over the entries (a bit each, up to 64) or, beyond 64, by a scan per key;
// both must find every key wherever it is and miss none.
func TestFastValidWireRequired(t *testing.T) {
	for _, n := range []int{1, 3, 64, 65, 70} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%02d", i)
		}
		quoted, _ := json.Marshal(keys)
		e := fastEntry(t, `{"type":"object","required":`+string(quoted)+`}`)
		all := map[string]any{"extra": true}
		for _, k := range keys {
			all[k] = 1.0
		}
		args, _ := structpb.NewStruct(all)
		// Deterministic marshalling sorts keys; the default order varies, so
		// both put required keys at the start, the end and in between.
		for _, det := range []bool{true, false} {
			b, _ := proto.MarshalOptions{Deterministic: det}.Marshal(args)
			if !e.FastValidWire(b) {
				t.Errorf("%d required, all present (deterministic=%v): want accepted", n, det)
			}
		}
		for _, drop := range []string{keys[0], keys[n/2], keys[n-1]} {
			some := maps.Clone(all)
			delete(some, drop)
			args, _ := structpb.NewStruct(some)
			b, _ := proto.Marshal(args)
			if e.FastValidWire(b) {
				t.Errorf("%d required, %q missing: want refused", n, drop)
			}
		}
	}
}

func mustMarshal(t testing.TB, js string) []byte {
	t.Helper()
	b, err := proto.Marshal(fastArgs(t, js))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFastValidWireAllocs(t *testing.T) {
	e := fastEntry(t, `{"type":"object","required":["title","tags"],"additionalProperties":false,"properties":{
		"title":{"type":"string","minLength":1,"pattern":"^[A-Z]"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5},
		"prio":{"enum":["low","high"]},"n":{"type":"integer","minimum":0},"meta":{"type":"object","maxProperties":4}}}`)
	b := mustMarshal(t, `{"title":"Ember & Oak","tags":["a","b"],"prio":"low","n":3,"meta":{"x":1,"y":[true,null]}}`)
	if !e.FastValidWire(b) {
		t.Fatal("valid arguments not accepted")
	}
	if n := testing.AllocsPerRun(100, func() { e.FastValidWire(b) }); n != 0 {
		t.Errorf("FastValidWire allocates %v times per call, want 0", n)
	}
}

func BenchmarkFastValidWire(b *testing.B) {
	e := fastEntry(b, `{"type":"object","required":["title","tags"],"additionalProperties":false,"properties":{
		"title":{"type":"string","minLength":1},"tags":{"type":"array","items":{"type":"string"},"maxItems":5},
		"prio":{"enum":["low","high"]},"n":{"type":"integer","minimum":0},"meta":{"type":"object"}}}`)
	raw := mustMarshal(b, `{"title":"Ember & Oak","tags":["a","b"],"prio":"low","n":3,"meta":{"x":1,"y":[true,null]}}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if !e.FastValidWire(raw) {
			b.Fatal("valid arguments not accepted")
		}
	}
}
