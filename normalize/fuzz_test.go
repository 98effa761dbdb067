package normalize

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

var fuzzSchemas = []string{
	`{}`,
	`{"properties":{"ops":{"type":"array"},"cfg":{"type":"object"},"title":{"type":"string"},"n":{"type":"integer"}}}`,
	`{"properties":{"a":{"type":["array","null"]},"s":{"type":["array","string"]}},"additionalProperties":{"type":["array","object"]}}`,
	`{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"x":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"array"}]}},"patternProperties":{"^o":{"type":"object"}}}}}`,
}

// sameShapeIgnoringStrings reports whether a and b have the same structure,
// keys and non-string values; string leaves are checked by leaf.
func sameShape(a, b *structpb.Value, leaf func(x, y string) bool) bool {
	switch ka := a.GetKind().(type) {
	case *structpb.Value_StringValue:
		kb, ok := b.GetKind().(*structpb.Value_StringValue)
		return ok && leaf(ka.StringValue, kb.StringValue)
	case *structpb.Value_StructValue:
		kb, ok := b.GetKind().(*structpb.Value_StructValue)
		if !ok || len(ka.StructValue.Fields) != len(kb.StructValue.Fields) {
			return false
		}
		for k, va := range ka.StructValue.Fields {
			vb, ok := kb.StructValue.Fields[k]
			if !ok || !sameShape(va, vb, leaf) {
				return false
			}
		}
		return true
	case *structpb.Value_ListValue:
		kb, ok := b.GetKind().(*structpb.Value_ListValue)
		if !ok || len(ka.ListValue.Values) != len(kb.ListValue.Values) {
			return false
		}
		for i := range ka.ListValue.Values {
			if !sameShape(ka.ListValue.Values[i], kb.ListValue.Values[i], leaf) {
				return false
			}
		}
		return true
	}
	return proto.Equal(a, b)
}

// maxFuzzInput bounds what a fuzz target reads of its input. Why the
// targets stalled at 0 execs/s: every input that reaches new coverage is
// minimized before fuzzing goes on, Go's minimizer tries removing every
// subrange of it (quadratic in its length, up to -fuzzminimizetime = 60 s
// by default), and a worker reports no execs while it minimizes. Longer
// input keeps reaching "new coverage" (8-bit loop counters in every
// instrumented package, the standard library included, move to the next
// bucket as loops run longer), so the mutator's ever-growing inputs kept
// the workers minimizing multi-KB strings. Reading only a prefix makes the
// tail irrelevant: the minimizer cuts it in a few tries and minimizes at
// most maxFuzzInput bytes (~1 s). Nothing a target checks needs more; the
// limits and depth bounds have their own table tests.
const maxFuzzInput = 256

// fuzzInput is the prefix of s a fuzz target reads.
func fuzzInput(s string) string { return s[:min(len(s), maxFuzzInput)] }

func FuzzNormalize(f *testing.F) {
	seeds := []string{
		`{"ops":"[{\"op\":\"add\",\"t\":\"a &amp;amp; b\"}]","title":"Ember &amp;amp; Oak"}`,
		`{"ops":"{\"op\":\"add\"}","cfg":"[1]"}`,
		`{"cfg":"{\"a\":1,\"a\":2}","n":"[9007199254740993]"}`,
		`{"a":"null","s":"[1]","z":"{\"k&amp;\":\"&lt;\"}"}`,
		`{"x":"[[[]]]","o1":"{}","k&amp;":"&#x26;amp;"}`,
		`{"ops":"[&quot;a&quot;]","title":"&amp;&amp;&amp;lt;"}`,
		`{"cmd":"make &amp;&amp; make test","nested":{"l":["&lt;div className=&quot;app&quot;&gt;"]}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	plans := make([]*Plan, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		plans[i] = mustPlan(f, s)
	}
	f.Fuzz(func(t *testing.T, schemaIdx uint8, src string) {
		src = fuzzInput(src)
		var args structpb.Struct
		if protojson.Unmarshal([]byte(src), &args) != nil {
			return
		}
		p := plans[int(schemaIdx)%len(plans)]
		before := proto.Clone(&args).(*structpb.Struct)
		out, rep := p.Apply(&args)

		if !proto.Equal(&args, before) {
			t.Fatalf("Apply mutated its input")
		}
		if len(rep.Repairs) == 0 && out != &args {
			t.Fatalf("nothing repaired but a different Struct came back")
		}
		// Clause 5: top-level keys are unchanged.
		if len(out.Fields) != len(args.Fields) {
			t.Fatalf("key count changed")
		}
		decoded := map[string]bool{}
		for _, r := range rep.Repairs {
			if r.Kind == JSONDecoded {
				decoded[r.Path] = true
			}
		}
		for k, v := range args.Fields {
			nv, ok := out.Fields[k]
			if !ok {
				t.Fatalf("key %q vanished", k)
			}
			if decoded[string(appendToken(nil, k))] {
				if p.Declared(k) == "" {
					t.Fatalf("%q decoded although not declared array/object", k)
				}
				continue
			}
			// Not decoded: same shape and keys at every depth, and strings
			// without '&' identical (entity decoding may change the others).
			leaf := func(x, y string) bool {
				return strings.IndexByte(x, '&') >= 0 || x == y
			}
			if !sameShape(v, nv, leaf) {
				t.Fatalf("param %q changed shape/keys/plain text: %v -> %v", k, v, nv)
			}
		}
		// ApplyInPlace agrees with Apply.
		inPlace := proto.Clone(before).(*structpb.Struct)
		if rep2 := p.ApplyInPlace(inPlace); !proto.Equal(inPlace, out) || len(rep2.Repairs) != len(rep.Repairs) || len(rep2.Skipped) != len(rep.Skipped) {
			t.Fatalf("ApplyInPlace differs from Apply")
		}
		// Idempotent when no bound was hit. The one documented exception: a
		// parameter skipped as not JSON whose entity decoding produced JSON
		// (JSON is judged as sent, so the second run sees different text).
		for _, r := range rep.Repairs {
			if r.BoundHit {
				return
			}
		}
		entityFixed := map[string]bool{}
		for _, r := range rep.Repairs {
			if r.Kind == EntitiesDecoded {
				entityFixed[r.Path] = true
			}
		}
		again, rep3 := p.Apply(out)
		for _, r := range rep3.Repairs {
			if r.Kind == JSONDecoded && entityFixed[r.Path] {
				continue
			}
			if r.Kind == EntitiesDecoded && strings.Count(r.Path, "/") > 1 && decodedUnder(rep3, r.Path) {
				continue
			}
			t.Fatalf("second run repaired again: %+v\nfirst: %+v", r, rep)
		}
		if len(rep3.Repairs) == 0 && again != out {
			t.Fatalf("second run copied without repairing")
		}
	})
}

// decodedUnder reports whether path lies inside a parameter the same report JSON-decoded.
func decodedUnder(rep Report, path string) bool {
	for _, r := range rep.Repairs {
		if r.Kind == JSONDecoded && strings.HasPrefix(path, r.Path+"/") {
			return true
		}
	}
	return false
}

// FuzzParseArguments: ParseArguments (gRPC's arguments_json, MCP's
// tools/call arguments) never panics, refuses only with a *ParseError or a
// *LimitError, accepts only what encoding/json reads as the same object (so
// no repeated key, inexact number or invented U+FFFD passes), and limits
// refuse only with a *LimitError what the unlimited parse accepts.
func FuzzParseArguments(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":[1,2,{"b":"c"}]}`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":[[[[[1]]]]]}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`, `{"a":"0123456789"}`, `[1]`, `{"a":1e400}`,
		`{"a":1,"a":2}`, `{"a":[{"b":1,"\u0062":2}]}`, "{\"a\":\"\xff\"}", "{\"k\xc3\":1}", `{"a":"\udc00"}`} {
		f.Add(s)
	}
	small := Limits{MaxBytes: 256, MaxStringLength: 8, MaxDepth: 4, MaxElements: 8, MaxKeys: 8}
	f.Fuzz(func(t *testing.T, in string) {
		in = fuzzInput(in)
		s, err := ParseArguments(in, Limits{})
		var (
			pe *ParseError
			le *LimitError
		)
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("%q: refused with %T %v, want a *ParseError", in, err, err)
		}
		if err == nil {
			var v any
			if jerr := json.Unmarshal([]byte(in), &v); jerr != nil {
				t.Fatalf("%q: accepted, encoding/json refuses it: %v", in, jerr)
			}
			if !reflect.DeepEqual(s.AsMap(), v) {
				t.Fatalf("%q: parsed to %v, encoding/json reads %v", in, s.AsMap(), v)
			}
		}
		_, lerr := ParseArguments(in, small)
		switch {
		case lerr == nil && err != nil:
			t.Fatalf("%q: accepted within limits, refused without: %v", in, err)
		case lerr != nil && err == nil && !errors.As(lerr, &le):
			t.Fatalf("%q: within limits refused with %v, want a *LimitError", in, lerr)
		}
	})
}
