package normalize

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"

	"github.com/flowdrop/gateway/internal/structwire"
)

// wireSchemas cover every way a parameter becomes a JSON-decoding candidate:
// properties (array, object, both), patternProperties, additionalProperties,
// plus string and scalar parameters that are never decoded.
var wireSchemas = map[string]string{
	"properties": `{"type":"object","properties":{
		"tags":{"type":"array"},"meta":{"type":"object"},"either":{"type":["array","object"]},
		"title":{"type":"string"},"count":{"type":"integer"},"mixed":{"type":["string","array"]}}}`,
	"patterns": `{"type":"object","properties":{"title":{"type":"string"}},
		"patternProperties":{"^list_":{"type":"array"}},"additionalProperties":{"type":"object"}}`,
	"no-candidates": `{"type":"object","properties":{"title":{"type":"string"},"count":{"type":"number"}}}`,
}

var wireKeys = []string{"tags", "meta", "either", "title", "count", "mixed", "list_a", "other", "", "k&amp;"}

var wireStrings = []string{
	"", "plain", "Ember & Oak", "a&b", "&amp;", "&lt;b&gt;", "&#x41;", "&#65;", "&#;", "&nosuch;",
	"&amp", "[1,2]", `{"a":1}`, "[", "null", "x &copy y", "&amp;amp;", "😀 & ü",
}

func genValue(t *rapid.T, depth int) *structpb.Value {
	max := 5
	if depth >= 3 {
		max = 3 // leaves only
	}
	switch rapid.IntRange(0, max).Draw(t, "kind") {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewBoolValue(rapid.Bool().Draw(t, "bool"))
	case 2:
		return structpb.NewNumberValue(rapid.Float64().Draw(t, "num"))
	case 3:
		if rapid.Bool().Draw(t, "anyString") {
			return structpb.NewStringValue(rapid.String().Draw(t, "str"))
		}
		return structpb.NewStringValue(rapid.SampledFrom(wireStrings).Draw(t, "str"))
	case 4:
		return structpb.NewStructValue(genStruct(t, depth+1))
	default:
		n := rapid.IntRange(0, 3).Draw(t, "listLen")
		l := &structpb.ListValue{}
		for range n {
			l.Values = append(l.Values, genValue(t, depth+1))
		}
		return structpb.NewListValue(l)
	}
}

func genStruct(t *rapid.T, depth int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	n := rapid.IntRange(0, 5).Draw(t, "fields")
	for range n {
		s.Fields[rapid.SampledFrom(wireKeys).Draw(t, "key")] = genValue(t, depth)
	}
	return s
}

// TestNeedsRepairWireSound is the property the fast path relies on: when
// the wire scan says "no repair", Apply on the decoded arguments agrees —
// no repair, and no skip for a declared array/object parameter.
func TestNeedsRepairWireSound(t *testing.T) {
	for name, schema := range wireSchemas {
		p := mustPlan(t, schema)
		t.Run(name, rapid.MakeCheck(func(rt *rapid.T) {
			s := genStruct(rt, 0)
			b, err := proto.MarshalOptions{Deterministic: rapid.Bool().Draw(rt, "det")}.Marshal(s)
			if err != nil {
				rt.Fatal(err)
			}
			if p.NeedsRepairWire(b) {
				return
			}
			_, rep := p.Apply(s)
			if len(rep.Repairs) > 0 || len(rep.Skipped) > 0 {
				rt.Fatalf("NeedsRepairWire = false but Apply reported %+v for %v", rep, s)
			}
		}))
	}
}

// TestNeedsRepairWireMalformed: on arbitrary bytes (mutated valid Structs)
// "false" must still mean the bytes decode as a Struct needing no repair.
func TestNeedsRepairWireMalformed(t *testing.T) {
	p := mustPlan(t, wireSchemas["properties"])
	rapid.Check(t, func(rt *rapid.T) {
		b, _ := proto.Marshal(genStruct(rt, 0))
		for range rapid.IntRange(0, 3).Draw(rt, "mutations") {
			if len(b) == 0 {
				break
			}
			i := rapid.IntRange(0, len(b)-1).Draw(rt, "at")
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				b[i] = rapid.Byte().Draw(rt, "byte")
			case 1:
				b = b[:i]
			default:
				b = append(b[:i:i], b[i+1:]...)
			}
		}
		if p.NeedsRepairWire(b) {
			return
		}
		var s structpb.Struct
		if err := proto.Unmarshal(b, &s); err != nil {
			rt.Fatalf("NeedsRepairWire = false for bytes that do not decode: %v (% x)", err, b)
		}
		if _, rep := p.Apply(&s); len(rep.Repairs) > 0 || len(rep.Skipped) > 0 {
			rt.Fatalf("NeedsRepairWire = false but Apply reported %+v", rep)
		}
	})
}

func TestNeedsRepairWireCases(t *testing.T) {
	p := mustPlan(t, wireSchemas["properties"])
	entry := func(key string, val []byte) []byte {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, key)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, val)
		var s []byte
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		return protowire.AppendBytes(s, e)
	}
	strVal := func(s string) []byte {
		b := protowire.AppendTag(nil, 3, protowire.BytesType)
		return protowire.AppendString(b, s)
	}
	tests := []struct {
		name   string
		args   string // JSON, marshalled with proto; empty when raw is set
		raw    []byte
		want   bool
		reason string
	}{
		{name: "clean", args: `{"title":"Ember & Oak","tags":["a","b"],"meta":{"k":"v"},"count":3}`, want: false,
			reason: "a bare '&' is not a character reference: nothing to repair"},
		{name: "empty", args: `{}`, want: false, reason: "no parameters, no repair"},
		{name: "entity top", args: `{"title":"Ember &amp; Oak"}`, want: true, reason: "a well-formed reference is decoded (clause 4)"},
		{name: "entity deep", args: `{"meta":{"a":[{"b":"&#x41;"}]}}`, want: true, reason: "string leaves at any depth are entity-decoded"},
		{name: "array as string", args: `{"tags":"[\"a\"]"}`, want: true, reason: "declared array holding a string is JSON-decoded"},
		{name: "bad array string", args: `{"tags":"not json"}`, want: true, reason: "declared array holding a non-JSON string is a reported skip"},
		{name: "either as string", args: `{"either":"{}"}`, want: true, reason: "array-or-object parameter holding a string"},
		{name: "string-typed", args: `{"mixed":"[1]","title":"[1]"}`, want: false, reason: "parameters that allow string are never decoded"},
		{name: "nested candidate name", args: `{"meta":{"tags":"[1]"}}`, want: false, reason: "JSON decoding applies to top-level parameters only"},
		{name: "unknown name", args: `{"zzz":"[1]"}`, want: false, reason: "no properties/patterns/additionalProperties match: never decoded"},
		{name: "unknown struct field", raw: protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1), want: true,
			reason: "a field Struct does not have is unexpected: take the full path"},
		{name: "truncated", raw: entry("title", strVal("x"))[:5], want: true, reason: "truncated bytes"},
		{name: "empty value", raw: entry("title", nil), want: true, reason: "a Value with no kind"},
		{name: "two kinds", raw: entry("title", append(strVal("x"), strVal("y")...)), want: true, reason: "a Value with several kinds on the wire"},
		{name: "bad utf8", raw: entry("title", strVal("\xff")), want: true, reason: "invalid UTF-8 does not decode as proto3 string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.raw
			if tc.args != "" {
				var err error
				if b, err = proto.Marshal(mustStruct(t, tc.args)); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.NeedsRepairWire(b); got != tc.want {
				t.Errorf("NeedsRepairWire = %v, want %v (%s)", got, tc.want, tc.reason)
			}
		})
	}
}

func TestNeedsRepairWireDepth(t *testing.T) {
	p := mustPlan(t, wireSchemas["properties"])
	v := structpb.NewStringValue("x")
	for range structwire.MaxDepth + 5 {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	b, _ := proto.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"meta": v}})
	if !p.NeedsRepairWire(b) {
		t.Error("nesting beyond structwire.MaxDepth must take the full path")
	}
}

func TestNeedsRepairWireAllocs(t *testing.T) {
	for name, schema := range wireSchemas {
		p := mustPlan(t, schema)
		b, _ := proto.Marshal(mustStruct(t, `{"title":"Ember & Oak","tags":["a",{"b":"&amp;"}],"list_x":"[1]","other":{"x":1}}`))
		if n := testing.AllocsPerRun(100, func() { p.NeedsRepairWire(b) }); n != 0 {
			t.Errorf("%s: NeedsRepairWire allocates %v times per call, want 0", name, n)
		}
	}
}

func BenchmarkNeedsRepairWire(b *testing.B) {
	p := mustPlan(b, wireSchemas["properties"])
	raw, _ := proto.Marshal(mustStruct(b, `{"title":"Ember & Oak: rotate staging credentials","tags":["a","b","c"],
		"meta":{"owner":"ops","prio":2},"count":3,"mixed":"plain text","body":"lorem ipsum dolor sit amet"}`))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if p.NeedsRepairWire(raw) {
			b.Fatal("clean payload reported as needing repair")
		}
	}
}
