package compat_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry/compat"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// obj wraps property schemas in an object schema: obj(`"a":{"type":"string"}`).
func obj(props string, extra ...string) string {
	s := `{"type":"object","properties":{` + props + `}`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

// TestCompare is the compatibility table: each row an old and a new input
// schema and the findings ("kind path"), with the reason it is (in)compatible.
func TestCompare(t *testing.T) {
	cases := []struct {
		reason   string
		old, new string
		want     []string
	}{
		// Identity and trivial widenings.
		{reason: "identical schemas accept the same values", old: obj(`"a":{"type":"string"}`), new: obj(`"a":{"type":"string"}`)},
		{reason: "a new optional property is compatible: undeclared keys are not the old contract", old: obj(``), new: obj(`"b":{"type":"string"}`)},
		{reason: "description and title changes constrain nothing", old: obj(`"a":{"type":"string","description":"x"}`), new: obj(`"a":{"type":"string","description":"y","title":"A"}`)},
		{reason: "a property that becomes the empty schema widens", old: obj(`"a":{"type":"string","maxLength":3}`), new: obj(`"a":{}`)},
		{reason: "a property that becomes true widens", old: obj(`"a":{"type":"string"}`), new: obj(`"a":true`)},
		// Types.
		{reason: "integer to number widens", old: obj(`"n":{"type":"integer"}`), new: obj(`"n":{"type":"number"}`)},
		{reason: "number to integer refuses 1.5", old: obj(`"n":{"type":"number"}`), new: obj(`"n":{"type":"integer"}`), want: []string{"narrowed /properties/n/type"}},
		{reason: "a type list that gains null widens", old: obj(`"a":{"type":"string"}`), new: obj(`"a":{"type":["string","null"]}`)},
		{reason: "a type list that loses null narrows", old: obj(`"a":{"type":["string","null"]}`), new: obj(`"a":{"type":"string"}`), want: []string{"narrowed /properties/a/type"}},
		{reason: "an untyped property that gains a type narrows", old: obj(`"a":{}`), new: obj(`"a":{"type":"string"}`), want: []string{"narrowed /properties/a/type"}},
		{reason: "array to string narrows", old: obj(`"ops":{"type":"array","items":{}}`), new: obj(`"ops":{"type":"string"}`), want: []string{"narrowed /properties/ops/type"}},
		// Enum and const.
		{reason: "an enum value removed is refused now", old: obj(`"c":{"type":"string","enum":["red","green","blue"]}`), new: obj(`"c":{"type":"string","enum":["red","green"]}`), want: []string{"narrowed /properties/c/enum"}},
		{reason: "an enum value added widens", old: obj(`"c":{"enum":["red"]}`), new: obj(`"c":{"enum":["red","green"]}`)},
		{reason: "an enum replaced by its type widens", old: obj(`"c":{"type":"string","enum":["red"]}`), new: obj(`"c":{"type":"string"}`)},
		{reason: "an old enum inside a new maxLength still fits", old: obj(`"c":{"type":"string","enum":["ab","cd"]}`), new: obj(`"c":{"type":"string","maxLength":2}`)},
		{reason: "an old enum checked value by value against a new pattern", old: obj(`"c":{"type":"string","enum":["ab","c-d"]}`), new: obj(`"c":{"type":"string","pattern":"^[a-z]+$"}`), want: []string{"narrowed /properties/c/pattern"}},
		{reason: "an enum added to an open string narrows", old: obj(`"c":{"type":"string"}`), new: obj(`"c":{"type":"string","enum":["a"]}`), want: []string{"narrowed /properties/c/enum"}},
		{reason: "a const changed refuses the old value", old: obj(`"k":{"const":"v1"}`), new: obj(`"k":{"const":"v2"}`), want: []string{"narrowed /properties/k/const"}},
		{reason: "a const becoming an enum holding it widens", old: obj(`"k":{"const":"v1"}`), new: obj(`"k":{"enum":["v1","v2"]}`)},
		// Numeric bounds.
		{reason: "a lowered maximum refuses the top of the range", old: obj(`"n":{"type":"integer","maximum":100}`), new: obj(`"n":{"type":"integer","maximum":10}`), want: []string{"narrowed /properties/n/maximum"}},
		{reason: "a raised maximum widens", old: obj(`"n":{"type":"integer","maximum":10}`), new: obj(`"n":{"type":"integer","maximum":100}`)},
		{reason: "a raised minimum refuses the bottom of the range", old: obj(`"n":{"type":"number","minimum":0}`), new: obj(`"n":{"type":"number","minimum":1}`), want: []string{"narrowed /properties/n/minimum"}},
		{reason: "a new minimum on an unbounded number narrows", old: obj(`"n":{"type":"number"}`), new: obj(`"n":{"type":"number","minimum":0}`), want: []string{"narrowed /properties/n/minimum"}},
		{reason: "minimum made exclusive refuses the bound itself", old: obj(`"n":{"type":"number","minimum":0}`), new: obj(`"n":{"type":"number","exclusiveMinimum":0}`), want: []string{"narrowed /properties/n/exclusiveMinimum"}},
		{reason: "exclusiveMaximum 10 on integers at most 9 is no change", old: obj(`"n":{"type":"integer","maximum":9}`), new: obj(`"n":{"type":"integer","exclusiveMaximum":10}`)},
		{reason: "exclusiveMaximum relaxed to an inclusive maximum widens", old: obj(`"n":{"type":"number","exclusiveMaximum":5}`), new: obj(`"n":{"type":"number","maximum":5}`)},
		{reason: "a new multipleOf refuses other numbers", old: obj(`"n":{"type":"integer"}`), new: obj(`"n":{"type":"integer","multipleOf":5}`), want: []string{"narrowed /properties/n/multipleOf"}},
		{reason: "multipleOf 10 to 5 widens: every multiple of 10 is one of 5", old: obj(`"n":{"type":"integer","multipleOf":10}`), new: obj(`"n":{"type":"integer","multipleOf":5}`)},
		{reason: "multipleOf 1 on integers is no change", old: obj(`"n":{"type":"integer"}`), new: obj(`"n":{"type":"integer","multipleOf":1}`)},
		{reason: "numeric bounds do not concern a string-only property", old: obj(`"s":{"type":"string"}`), new: obj(`"s":{"type":"string","minimum":5}`)},
		// Strings.
		{reason: "a new maxLength refuses longer strings", old: obj(`"s":{"type":"string"}`), new: obj(`"s":{"type":"string","maxLength":10}`), want: []string{"narrowed /properties/s/maxLength"}},
		{reason: "a raised minLength refuses shorter strings", old: obj(`"s":{"type":"string","minLength":1}`), new: obj(`"s":{"type":"string","minLength":2}`), want: []string{"narrowed /properties/s/minLength"}},
		{reason: "a lowered minLength widens", old: obj(`"s":{"type":"string","minLength":2}`), new: obj(`"s":{"type":"string","minLength":1}`)},
		{reason: "a new pattern may refuse strings", old: obj(`"s":{"type":"string"}`), new: obj(`"s":{"type":"string","pattern":"^[a-z]+$"}`), want: []string{"narrowed /properties/s/pattern"}},
		{reason: "a new format may refuse strings", old: obj(`"s":{"type":"string"}`), new: obj(`"s":{"type":"string","format":"email"}`), want: []string{"narrowed /properties/s/format"}},
		{reason: "a pattern removed widens", old: obj(`"s":{"type":"string","pattern":"^a"}`), new: obj(`"s":{"type":"string"}`)},
		// Arrays.
		{reason: "a new minItems refuses empty arrays", old: obj(`"l":{"type":"array","items":{}}`), new: obj(`"l":{"type":"array","items":{},"minItems":1}`), want: []string{"narrowed /properties/l/minItems"}},
		{reason: "a lowered maxItems refuses longer arrays", old: obj(`"l":{"type":"array","items":{},"maxItems":5}`), new: obj(`"l":{"type":"array","items":{},"maxItems":3}`), want: []string{"narrowed /properties/l/maxItems"}},
		{reason: "uniqueItems added refuses repeats", old: obj(`"l":{"type":"array","items":{}}`), new: obj(`"l":{"type":"array","items":{},"uniqueItems":true}`), want: []string{"narrowed /properties/l/uniqueItems"}},
		{reason: "items string to integer refuses every old non-empty array", old: obj(`"l":{"type":"array","items":{"type":"string"}}`), new: obj(`"l":{"type":"array","items":{"type":"integer"}}`), want: []string{"narrowed /properties/l/items/type"}},
		{reason: "items integer to number widens", old: obj(`"l":{"type":"array","items":{"type":"integer"}}`), new: obj(`"l":{"type":"array","items":{"type":"number"}}`)},
		{reason: "a prefixItems position narrowed", old: obj(`"p":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]}`), new: obj(`"p":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`), want: []string{"narrowed /properties/p/prefixItems/1/type"}},
		{reason: "items false after the prefix refuses longer arrays", old: obj(`"p":{"type":"array","prefixItems":[{"type":"string"}]}`), new: obj(`"p":{"type":"array","prefixItems":[{"type":"string"}],"items":false}`), want: []string{"narrowed /properties/p/items/false"}},
		// Objects.
		{reason: "a removed property breaks callers that send it", old: obj(`"a":{},"b":{}`), new: obj(`"a":{}`), want: []string{"removed /properties/b"}},
		{reason: "an existing property made required", old: obj(`"a":{}`), new: obj(`"a":{}`, `"required":["a"]`), want: []string{"newly-required /properties/a"}},
		{reason: "a new required property", old: obj(``), new: obj(`"z":{}`, `"required":["z"]`), want: []string{"newly-required /properties/z"}},
		{reason: "a required property made optional widens", old: obj(`"a":{}`, `"required":["a"]`), new: obj(`"a":{}`)},
		{reason: "additionalProperties false at the root refuses extra keys", old: obj(`"a":{}`), new: obj(`"a":{}`, `"additionalProperties":false`), want: []string{"narrowed /additionalProperties"}},
		{reason: "additionalProperties false on a nested object", old: obj(`"o":{"type":"object","properties":{"x":{}}}`), new: obj(`"o":{"type":"object","properties":{"x":{}},"additionalProperties":false}`), want: []string{"narrowed /properties/o/additionalProperties"}},
		{reason: "additionalProperties narrowed from a schema", old: obj(``, `"additionalProperties":{"type":"number"}`), new: obj(``, `"additionalProperties":{"type":"integer"}`), want: []string{"narrowed /additionalProperties/type"}},
		{reason: "additionalProperties false dropped widens", old: obj(`"a":{}`, `"additionalProperties":false`), new: obj(`"a":{}`)},
		{reason: "a new property must accept what the old additionalProperties did", old: obj(``, `"additionalProperties":{"type":"string"}`), new: obj(`"k":{"type":"integer"}`, `"additionalProperties":{"type":"string"}`), want: []string{"narrowed /properties/k/type"}},
		{reason: "a new maxProperties narrows", old: obj(``), new: obj(``, `"maxProperties":3`), want: []string{"narrowed /maxProperties"}},
		{reason: "nested property removed and another required", old: obj(`"o":{"type":"object","properties":{"x":{},"y":{}}}`), new: obj(`"o":{"type":"object","properties":{"x":{}},"required":["x"]}`), want: []string{"newly-required /properties/o/properties/x", "removed /properties/o/properties/y"}},
		// Composition.
		{reason: "an anyOf branch removed", old: obj(`"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}`), new: obj(`"v":{"anyOf":[{"type":"string"}]}`), want: []string{"narrowed /properties/v/anyOf"}},
		{reason: "an anyOf branch added widens", old: obj(`"v":{"anyOf":[{"type":"string"}]}`), new: obj(`"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}`)},
		{reason: "anyOf replaced by the union type widens", old: obj(`"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}`), new: obj(`"v":{"type":["string","integer"]}`)},
		{reason: "a oneOf branch removed", old: obj(`"v":{"oneOf":[{"type":"string"},{"type":"boolean"}]}`), new: obj(`"v":{"oneOf":[{"type":"string"}]}`), want: []string{"narrowed /properties/v/oneOf"}},
		{reason: "a disjoint oneOf branch added widens", old: obj(`"v":{"oneOf":[{"type":"string"}]}`), new: obj(`"v":{"oneOf":[{"type":"string"},{"type":"boolean"}]}`)},
		{reason: "an overlapping oneOf branch added refuses values matching both", old: obj(`"v":{"oneOf":[{"type":"string"}]}`), new: obj(`"v":{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}`), want: []string{"narrowed /properties/v/oneOf"}},
		{reason: "a tagged-union oneOf gains a tag", old: obj(`"s":{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]}]}`), new: obj(`"s":{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]}`)},
		{reason: "allOf adds a conjunct with a bound", old: obj(`"n":{"type":"integer"}`), new: obj(`"n":{"allOf":[{"type":"integer"},{"maximum":5}]}`), want: []string{"narrowed /properties/n/maximum"}},
		{reason: "allOf taken apart on the old side too", old: obj(`"n":{"allOf":[{"type":"integer"},{"maximum":5}]}`), new: obj(`"n":{"type":"integer","maximum":9}`)},
		{reason: "a new not narrows (compared for equality only)", old: obj(`"s":{"type":"string"}`), new: obj(`"s":{"type":"string","not":{"const":"x"}}`), want: []string{"narrowed /properties/s/not"}},
		// References.
		{reason: "a $ref target narrowed is followed", old: obj(`"a":{"$ref":"#/$defs/x"}`, `"$defs":{"x":{"type":"string"}}`), new: obj(`"a":{"$ref":"#/$defs/x"}`, `"$defs":{"x":{"type":"string","maxLength":4}}`), want: []string{"narrowed /properties/a/maxLength"}},
		{reason: "a $ref inlined with the same schema is no change", old: obj(`"a":{"$ref":"#/$defs/x"}`, `"$defs":{"x":{"type":"string"}}`), new: obj(`"a":{"type":"string"}`)},
		{reason: "a $ref to an array replaced by a string narrows", old: obj(`"a":{"$ref":"#/$defs/x"}`, `"$defs":{"x":{"type":"array"}}`), new: obj(`"a":{"type":"string"}`), want: []string{"narrowed /properties/a/type"}},
		{reason: "a recursive tree compared through its cycle", old: obj(`"t":{"$ref":"#/$defs/node"}`, `"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}`), new: obj(`"t":{"$ref":"#/$defs/node"}`, `"$defs":{"node":{"type":"object","properties":{"v":{"type":"number"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}`)},
		{reason: "a narrowing deep in a recursive tree is found", old: obj(`"t":{"$ref":"#/$defs/node"}`, `"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}`), new: obj(`"t":{"$ref":"#/$defs/node"}`, `"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}`), want: []string{"narrowed /properties/t/properties/v/minimum"}},
		{reason: "the root referenced as # (protoschema's self-reference)", old: `{"type":"object","properties":{"next":{"$ref":"#"},"n":{"type":"integer"}}}`, new: `{"type":"object","properties":{"next":{"$ref":"#"},"n":{"type":"integer","maximum":3}}}`, want: []string{"narrowed /properties/n/maximum"}},
		// Fail closed.
		{reason: "a $ref that does not resolve cannot be compared", old: obj(`"a":{"type":"string"}`), new: obj(`"a":{"$ref":"#/$defs/missing"}`), want: []string{"too-complex "}},
		{reason: "an external $ref cannot be compared", old: obj(`"a":{"type":"string"}`), new: obj(`"a":{"$ref":"https://example.com/s.json"}`), want: []string{"too-complex "}},
		{reason: "a reference-only cycle is bounded", old: obj(`"a":{"type":"string"}`), new: obj(`"a":{"$ref":"#/$defs/x"}`, `"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}}`), want: []string{"too-complex "}},
		{reason: "a property schema that became false refuses every value", old: obj(`"a":{}`), new: obj(`"a":false`), want: []string{"narrowed /properties/a/false"}},
		{reason: "a false old property accepted nothing: anything is wider", old: obj(`"a":false`), new: obj(`"a":{"type":"string"}`)},
	}
	for _, c := range cases {
		old, new := decode(t, c.old), decode(t, c.new)
		var got []string
		for _, f := range compat.Compare(old, new) {
			got = append(got, string(f.Kind)+" "+f.Path)
			if f.Message == "" || (f.Kind != compat.TooComplex && f.Keyword == "") {
				t.Errorf("%s: finding without message or keyword: %+v", c.reason, f)
			}
			if f.Kind == compat.Narrowed && !strings.HasSuffix(f.Path, "/"+f.Keyword) {
				t.Errorf("%s: narrowed finding's path %q does not end in its keyword %q", c.reason, f.Path, f.Keyword)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n old %s\n new %s\n findings %v, want %v", c.reason, c.old, c.new, got, c.want)
		}
	}
	if len(cases) < 40 {
		t.Fatalf("the table has %d rows; keep at least 40", len(cases))
	}
}
