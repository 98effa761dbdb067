package normalize

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileDeclared(t *testing.T) {
	cases := []struct {
		reason string
		schema string
		param  string
		want   string // Plan.Declared: "" = never decoded
	}{
		{"properties entry type array", `{"properties":{"p":{"type":"array"}}}`, "p", "array"},
		{"properties entry type object", `{"properties":{"p":{"type":"object"}}}`, "p", "object"},
		{"type list array+null declares array", `{"properties":{"p":{"type":["array","null"]}}}`, "p", "array"},
		{"type list array+object declares both", `{"properties":{"p":{"type":["array","object"]}}}`, "p", "array or object"},
		{"type list with string is declared string", `{"properties":{"p":{"type":["object","string"]}}}`, "p", ""},
		{"integer is not a candidate", `{"properties":{"p":{"type":"integer"}}}`, "p", ""},
		{"only items, no type: not declared array (conservative reading)", `{"properties":{"p":{"items":{}}}}`, "p", ""},
		{"only prefixItems, no type: not declared array", `{"properties":{"p":{"prefixItems":[{}]}}}`, "p", ""},
		{"only properties, no type: not declared object", `{"properties":{"p":{"properties":{"a":{}}}}}`, "p", ""},
		{"boolean schema true declares nothing", `{"properties":{"p":true}}`, "p", ""},
		{"allOf collects types", `{"properties":{"p":{"allOf":[{"type":"array"},{"minItems":1}]}}}`, "p", "array"},
		{"oneOf collects types", `{"properties":{"p":{"oneOf":[{"type":"array"},{"type":"object"}]}}}`, "p", "array or object"},
		{"anyOf with string anywhere is declared string", `{"properties":{"p":{"anyOf":[{"type":"array"},{"anyOf":[{"type":"string"}]}]}}}`, "p", ""},
		{"$ref to #/definitions", `{"properties":{"p":{"$ref":"#/definitions/L"}},"definitions":{"L":{"type":"array"}}}`, "p", "array"},
		{"$ref with ~1 and ~0 escapes", `{"properties":{"p":{"$ref":"#/$defs/a~1b~0c"}},"$defs":{"a/b~c":{"type":"object"}}}`, "p", "object"},
		{"$ref with percent-encoding", `{"properties":{"p":{"$ref":"#/$defs/a%20b"}},"$defs":{"a b":{"type":"array"}}}`, "p", "array"},
		{"$ref through an array index", `{"properties":{"p":{"$ref":"#/$defs/u/anyOf/1"}},"$defs":{"u":{"anyOf":[{"type":"null"},{"type":"array"}]}}}`, "p", "array"},
		{"$ref to $anchor", `{"properties":{"p":{"$ref":"#L"}},"$defs":{"x":{"$anchor":"L","type":"array"}}}`, "p", "array"},
		{"$ref chain", `{"properties":{"p":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"type":"array"}}}`, "p", "array"},
		{"$ref cycle compiles and keeps what it found", `{"properties":{"p":{"$ref":"#/$defs/A"}},"$defs":{"A":{"anyOf":[{"type":"object"},{"$ref":"#/$defs/B"}]},"B":{"$ref":"#/$defs/A"}}}`, "p", "object"},
		{"self-referencing tree type", `{"properties":{"p":{"$ref":"#/$defs/Node"}},"$defs":{"Node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}}`, "p", "object"},
		{"$ref to the whole schema (#)", `{"type":"object","properties":{"p":{"$ref":"#"}}}`, "p", "object"},
		{"non-local $ref: unknown, never decoded", `{"properties":{"p":{"anyOf":[{"type":"array"},{"$ref":"other.json#/x"}]}}}`, "p", ""},
		{"patternProperties match", `{"patternProperties":{"^l_":{"type":"array"}}}`, "l_x", "array"},
		{"every matching pattern counts: string in one wins", `{"patternProperties":{"^l_":{"type":"array"},"_s$":{"type":"string"}}}`, "l_s", ""},
		{"properties wins over patternProperties", `{"properties":{"l_x":{"type":"integer"}},"patternProperties":{"^l_":{"type":"array"}}}`, "l_x", ""},
		{"patternProperties wins over additionalProperties", `{"patternProperties":{"^s":{"type":"string"}},"additionalProperties":{"type":"array"}}`, "sx", ""},
		{"additionalProperties schema applies to other names", `{"properties":{"a":{}},"additionalProperties":{"type":"object"}}`, "zzz", "object"},
		{"undeclared name, no additionalProperties", `{"properties":{"a":{"type":"array"}}}`, "b", ""},
		{"root $ref supplies properties", `{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"p":{"type":"array"}}}}}`, "p", "array"},
		{"root anyOf branches supply properties", `{"anyOf":[{"properties":{"p":{"type":"array"}}},{"properties":{"q":{}}}]}`, "p", "array"},
		{"root $ref cycle compiles", `{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/B","properties":{"p":{"type":"object"}}},"B":{"$ref":"#/$defs/A"}}}`, "p", "object"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p := mustPlan(t, tc.schema)
			if got := p.Declared(tc.param); got != tc.want {
				t.Errorf("Declared(%q) = %q, want %q", tc.param, got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		reason  string
		schema  string
		pointer string
		mention string
	}{
		{"not JSON", `{"properties":`, "", "not a JSON object"},
		{"not an object", `[1]`, "", "not a JSON object"},
		{"pattern that does not compile names its pointer", `{"patternProperties":{"(a/b":{"type":"array"}}}`, "/patternProperties/(a~1b", "does not compile"},
		{"unresolvable local $ref", `{"properties":{"p":{"$ref":"#/$defs/missing"}}}`, "/properties/p/$ref", `no member "$defs"`},
		{"unknown $anchor", `{"properties":{"p":{"$ref":"#nope"}}}`, "/properties/p/$ref", "no $anchor"},
		{"bad percent-encoding in $ref", `{"properties":{"p":{"$ref":"#/%zz"}}}`, "/properties/p/$ref", "percent-encoding"},
		{"$ref not a string", `{"properties":{"p":{"$ref":1}}}`, "/properties/p/$ref", "must be a string"},
		{"properties not an object", `{"properties":[]}`, "/properties", "must be an object"},
		{"type of the wrong kind", `{"properties":{"p":{"type":1}}}`, "/properties/p/type", "type must be"},
		{"type list member not a string", `{"properties":{"p":{"type":["array",2]}}}`, "/properties/p/type/1", "must be strings"},
		{"anyOf not an array", `{"properties":{"p":{"anyOf":{}}}}`, "/properties/p/anyOf", "array of schemas"},
		{"subschema not an object", `{"properties":{"p":{"allOf":[3]}}}`, "/properties/p/allOf/0", "object or a boolean"},
		{"error inside a root allOf branch", `{"allOf":[{"properties":{"p":{"$ref":"#/x"}}}]}`, "/allOf/0/properties/p/$ref", "does not resolve"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := CompileJSON([]byte(tc.schema))
			var ce *CompilationError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CompilationError", err)
			}
			if ce.Pointer != tc.pointer {
				t.Errorf("Pointer = %q, want %q (err %v)", ce.Pointer, tc.pointer, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestCompileNilSchemaDecodesOnlyEntities(t *testing.T) {
	p, err := Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, rep := p.Apply(mustStruct(t, `{"a":"[1]","b":"&lt;"}`))
	if g, w := canonJSON(t, out), canon(t, `{"a":"[1]","b":"<"}`); g != w {
		t.Errorf("got %s want %s (report %+v)", g, w, rep)
	}
}
