package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

func fastEntry(t testing.TB, js string) *Schema { t.Helper(); return compileJSON(t, js) }

// compileJSON compiles a schema given as JSON with opts.
func compileJSON(t testing.TB, js string, opts ...Option) *Schema {
	t.Helper()
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("schema %s: %v", js, err)
	}
	e, err := Compile(&s, opts...)
	if err != nil {
		t.Fatalf("schema %s: %v", js, err)
	}
	return e
}

func fastArgs(t testing.TB, js string) *structpb.Struct {
	t.Helper()
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("args %s: %v", js, err)
	}
	return &s
}

// jsonschemaAccepts is the authoritative answer, exactly as Validate asks it.
func jsonschemaAccepts(e *Schema, args *structpb.Struct) bool {
	return e.js.Validate(structToMap(args)) == nil
}

func numArgs(name string, f float64) func() *structpb.Struct {
	return func() *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{name: structpb.NewNumberValue(f)}}
	}
}

// fastCase is one row of the fast validator's table.
type fastCase struct {
	reason   string
	schema   string
	args     string
	build    func() *structpb.Struct // instead of args, for values JSON cannot spell
	valid    bool                    // jsonschema's verdict
	declines bool                    // fast path refuses to judge (falls back)
}

func (c fastCase) arguments(t testing.TB) *structpb.Struct {
	if c.build != nil {
		return c.build()
	}
	return fastArgs(t, c.args)
}

// TestFastValidatorTable: the fast validator agrees with jsonschema on every
// row of fastCases.
func TestFastValidatorTable(t *testing.T) {
	for _, c := range fastCases() {
		e := fastEntry(t, c.schema)
		if e.fast == nil {
			_, err := compileFast(e.js)
			t.Errorf("%s: no fast validator: %v", c.reason, err)
			continue
		}
		args := c.arguments(t)
		if got := jsonschemaAccepts(e, args); got != c.valid {
			t.Errorf("%s: jsonschema accepts=%v, row says %v", c.reason, got, c.valid)
			continue
		}
		want := c.valid && !c.declines
		if got := validFast(e.fast, args); got != want {
			t.Errorf("%s: fast.valid=%v, want %v", c.reason, got, want)
		}
		// Validate is jsonschema's verdict, except that it refuses NaN and
		// ±Infinity wherever they are (finite.go), as no JSON value is one.
		if got, want := e.Validate(args, nil) == nil, c.valid && structFinite(args); got != want {
			t.Errorf("%s: Validate accepts=%v, want %v", c.reason, got, want)
		}
	}
}

// fastCases pins tricky cases: for each, jsonschema's verdict is asserted
// (so the row means what it says) and the fast validator must give the same
// one — except where it declines on purpose.
func fastCases() []fastCase {
	const d4 = `"$schema":"http://json-schema.org/draft-04/schema#",`
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	const d2019 = `"$schema":"https://json-schema.org/draft/2019-09/schema",`
	obj := func(prefix, props string) string {
		return `{` + prefix + `"type":"object","properties":{` + props + `}}`
	}
	return []fastCase{
		{reason: "integer 1.0 is an integer", schema: obj("", `"n":{"type":"integer"}`), args: `{"n":1.0}`, valid: true},
		{reason: "integer 1.5 is not", schema: obj("", `"n":{"type":"integer"}`), args: `{"n":1.5}`},
		{reason: "integer 2^53 is within the safe range", schema: obj("", `"n":{"type":"integer"}`), args: `{"n":9007199254740992}`, valid: true},
		{reason: "integer 2^53+2 is beyond ±2^53", schema: obj("", `"n":{"type":"integer"}`), args: `{"n":9007199254740994}`},
		{reason: "integer -2^53-2 is beyond ±2^53", schema: obj("", `"n":{"type":"integer"}`), args: `{"n":-9007199254740994}`},
		{reason: "integer|null still bounds integers", schema: obj("", `"n":{"type":["integer","null"]}`), args: `{"n":1e20}`},
		{reason: "integer|number admits big values", schema: obj("", `"n":{"type":["integer","number"]}`), args: `{"n":1e300}`, valid: true},
		{reason: "±2^53 applies inside anyOf", schema: obj("", `"n":{"anyOf":[{"type":"integer"},{"type":"boolean"}]}`), args: `{"n":-1e300}`},
		{reason: "NaN is no JSON value", schema: obj("", `"n":{"type":"number"}`), build: numArgs("n", math.NaN())},
		{reason: "+Inf is no JSON value", schema: obj("", `"n":{"minimum":0}`), build: numArgs("n", math.Inf(1))},
		{reason: "+Inf under {} is accepted by jsonschema, which compiles {} to true (Validate refuses it)", schema: obj("", `"n":{}`), build: numArgs("n", math.Inf(1)), valid: true},
		{reason: "NaN under no schema is never looked at by jsonschema (Validate refuses it)", schema: obj("", `"m":{}`), build: numArgs("n", math.NaN()), valid: true},
		{reason: "NaN under a true schema is accepted by jsonschema (Validate refuses it)", schema: obj(`"$schema":"https://json-schema.org/draft/2020-12/schema",`, `"n":true`), build: numArgs("n", math.NaN()), valid: true},
		{reason: "minLength counts code points, not bytes", schema: obj("", `"s":{"type":"string","minLength":2,"maxLength":2}`), args: `{"s":"é😀"}`, valid: true},
		{reason: "maxLength counts code points", schema: obj("", `"s":{"type":"string","maxLength":1}`), args: `{"s":"é😀"}`},
		{reason: "pattern is a search, not anchored", schema: obj("", `"s":{"type":"string","pattern":"a"}`), args: `{"s":"xay"}`, valid: true},
		{reason: "pattern anchored mismatch", schema: obj("", `"s":{"type":"string","pattern":"^[a-z]+$"}`), args: `{"s":"ab1"}`},
		{reason: "additionalProperties false refuses an extra key", schema: `{"type":"object","additionalProperties":false,"properties":{"a":{}}}`, args: `{"a":1,"b":2}`},
		{reason: "additionalProperties false with only known keys", schema: `{"type":"object","additionalProperties":false,"properties":{"a":{}}}`, args: `{"a":1}`, valid: true},
		{reason: "patternProperties count as evaluated", schema: `{"type":"object","additionalProperties":false,"patternProperties":{"^x-":{"type":"string"}}}`, args: `{"x-a":"v"}`, valid: true},
		{reason: "patternProperties validate their values", schema: `{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`, args: `{"x-a":1}`},
		{reason: "additionalProperties schema", schema: `{"type":"object","additionalProperties":{"type":"integer"}}`, args: `{"a":1,"b":"x"}`},
		{reason: "anyOf admits null", schema: obj("", `"d":{"anyOf":[{"type":"string"},{"type":"null"}]}`), args: `{"d":null}`, valid: true},
		{reason: "anyOf refuses a number", schema: obj("", `"d":{"anyOf":[{"type":"string"},{"type":"null"}]}`), args: `{"d":3}`},
		{reason: "oneOf with both matching fails", schema: obj("", `"n":{"oneOf":[{"type":"integer"},{"type":"number"}]}`), args: `{"n":1}`},
		{reason: "oneOf with one matching", schema: obj("", `"n":{"oneOf":[{"type":"integer"},{"type":"number"}]}`), args: `{"n":1.5}`, valid: true},
		{reason: "allOf needs all", schema: obj("", `"n":{"allOf":[{"minimum":1},{"maximum":2}]}`), args: `{"n":3}`},
		{reason: "$ref to $defs", schema: `{"type":"object","$defs":{"id":{"type":"string","minLength":3}},"properties":{"a":{"$ref":"#/$defs/id"}}}`, args: `{"a":"ab"}`},
		{reason: "$ref to $defs valid", schema: `{"type":"object","$defs":{"id":{"type":"string","minLength":3}},"properties":{"a":{"$ref":"#/$defs/id"}}}`, args: `{"a":"abc"}`, valid: true},
		{reason: "2020: $ref siblings apply", schema: `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":1}}}`, args: `{"a":"abc"}`},
		{reason: "draft-07: $ref siblings are ignored", schema: `{` + d7 + `"type":"object","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","maxLength":1}}}`, args: `{"a":"abc"}`, valid: true},
		{reason: "draft-07: const beside $ref is still checked (jsonschema quirk)", schema: `{` + d7 + `"type":"object","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","const":"x"}}}`, args: `{"a":"abc"}`},
		{reason: "recursive $ref that descends", schema: `{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}},"v":{"type":"integer"}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`,
			args: `{"root":{"v":1,"kids":[{"v":2,"kids":[{"v":3.5}]}]}}`},
		{reason: "recursive $ref valid tree", schema: `{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}},"v":{"type":"integer"}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`,
			args: `{"root":{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}}`, valid: true},
		{reason: "draft-04: exclusiveMinimum true makes minimum exclusive", schema: obj(d4, `"n":{"type":"number","minimum":0,"exclusiveMinimum":true}`), args: `{"n":0}`},
		{reason: "draft-04: exclusive form above the bound", schema: obj(d4, `"n":{"type":"number","minimum":0,"exclusiveMinimum":true}`), args: `{"n":0.1}`, valid: true},
		{reason: "draft-04: exclusiveMinimum false is inclusive", schema: obj(d4, `"n":{"type":"number","minimum":0,"exclusiveMinimum":false}`), args: `{"n":0}`, valid: true},
		{reason: "draft-04: exclusiveMaximum true", schema: obj(d4, `"n":{"type":"number","maximum":5,"exclusiveMaximum":true}`), args: `{"n":5}`},
		{reason: "2020: numeric exclusiveMinimum", schema: obj("", `"n":{"type":"number","exclusiveMinimum":0}`), args: `{"n":0}`},
		{reason: "2020: -0 is not above exclusiveMinimum 0", schema: obj("", `"n":{"exclusiveMinimum":0}`), args: `{"n":-0.0}`},
		{reason: "2020: numeric exclusiveMaximum", schema: obj("", `"n":{"exclusiveMaximum":0.3}`), args: `{"n":0.29999999999999993}`, valid: true},
		{reason: "draft-07: numeric exclusiveMinimum", schema: obj(d7, `"n":{"exclusiveMinimum":1.5}`), args: `{"n":1.5}`},
		{reason: "const 1 equals 1.0", schema: obj("", `"n":{"const":1}`), args: `{"n":1.0}`, valid: true},
		{reason: "const 1 is not 1.5", schema: obj("", `"n":{"const":1}`), args: `{"n":1.5}`},
		{reason: "const 1 is not \"1\"", schema: obj("", `"n":{"const":1}`), args: `{"n":"1"}`},
		{reason: "const object compares deeply", schema: obj("", `"o":{"const":{"a":[1,{"b":null}]}}`), args: `{"o":{"a":[1.0,{"b":null}]}}`, valid: true},
		{reason: "const object with an extra key", schema: obj("", `"o":{"const":{"a":1}}`), args: `{"o":{"a":1,"b":2}}`},
		{reason: "enum with mixed types", schema: obj("", `"e":{"enum":[1,"a",null,[true]]}`), args: `{"e":[true]}`, valid: true},
		{reason: "enum miss", schema: obj("", `"e":{"enum":[1,"a",null,[true]]}`), args: `{"e":[false]}`},
		{reason: "nested items", schema: obj("", `"m":{"type":"array","items":{"type":"array","items":{"type":"integer"},"maxItems":2}}`), args: `{"m":[[1,2],[3]]}`, valid: true},
		{reason: "nested items, inner too long", schema: obj("", `"m":{"type":"array","items":{"type":"array","items":{"type":"integer"},"maxItems":2}}`), args: `{"m":[[1,2],[3,4,5]]}`},
		{reason: "nested items, inner fraction", schema: obj("", `"m":{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`), args: `{"m":[[1,2.5]]}`},
		{reason: "draft-07: tuple items with additionalItems false", schema: obj(d7, `"t":{"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`), args: `{"t":["a",1,2]}`},
		{reason: "draft-07: tuple items shorter than the tuple", schema: obj(d7, `"t":{"items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`), args: `{"t":["a"]}`, valid: true},
		{reason: "draft-07: additionalItems is moot when items is a schema", schema: obj(d7, `"t":{"items":{"type":"integer"},"additionalItems":false}`), args: `{"t":[1,2,3]}`, valid: true},
		{reason: "draft-07: additionalItems without items is ignored (jsonschema compiles it only beside items)", schema: obj(d7, `"t":{"additionalItems":{"type":"string"}}`), args: `{"t":[1]}`, valid: true},
		{reason: "2020: prefixItems and items false", schema: obj("", `"t":{"prefixItems":[{"type":"string"}],"items":false}`), args: `{"t":["a",1]}`},
		{reason: "2020: prefixItems only", schema: obj("", `"t":{"prefixItems":[{"type":"string"}],"items":false}`), args: `{"t":["a"]}`, valid: true},
		{reason: "2019-09: items array form", schema: obj(d2019, `"t":{"items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`), args: `{"t":["a",2,"c"]}`},
		{reason: "uniqueItems: 1 and 1.0 are equal", schema: obj("", `"u":{"uniqueItems":true}`), args: `{"u":[1,1.0]}`},
		{reason: "uniqueItems: distinct objects", schema: obj("", `"u":{"uniqueItems":true}`), args: `{"u":[{"a":1},{"a":2},{"b":1}]}`, valid: true},
		{reason: "uniqueItems: equal objects", schema: obj("", `"u":{"uniqueItems":true}`), args: `{"u":[{"a":1,"b":[2]},{"b":[2],"a":1}]}`},
		{reason: "uniqueItems on a long array is left to jsonschema", schema: obj("", `"u":{"uniqueItems":true}`), args: `{"u":[` + seq(maxFastUnique+1) + `]}`, valid: true, declines: true},
		{reason: "min/maxProperties", schema: obj("", `"o":{"type":"object","minProperties":1,"maxProperties":2}`), args: `{"o":{"a":1,"b":2,"c":3}}`},
		{reason: "required inside a nested object", schema: obj("", `"o":{"type":"object","required":["id"]}`), args: `{"o":{"name":"x"}}`},
		{reason: "keywords of other types do not apply", schema: obj("", `"x":{"minLength":5,"minimum":10,"maxItems":0,"required":["z"]}`), args: `{"x":true}`, valid: true},
		{reason: "false schema property present", schema: obj("", `"gone":false`), args: `{"gone":1}`},
		{reason: "2020: format is an annotation", schema: obj("", `"e":{"type":"string","format":"email"}`), args: `{"e":"not an email"}`, valid: true},
		{reason: "unknown keywords are ignored", schema: obj("", `"e":{"type":"string","x-ui":"textarea","nullable":true}`), args: `{"e":"v"}`, valid: true},
		{reason: "null struct value is an empty object", schema: obj("", `"o":{"type":"object","minProperties":1}`),
			build: func() *structpb.Struct {
				return &structpb.Struct{Fields: map[string]*structpb.Value{"o": {Kind: &structpb.Value_StructValue{}}}}
			}},
		{reason: "nil Value is null", schema: obj("", `"o":{"type":"null"}`),
			build: func() *structpb.Struct { return &structpb.Struct{Fields: map[string]*structpb.Value{"o": nil}} }, valid: true},
	}
}

func seq(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return strings.Join(parts, ",")
}

// TestFastValidatorUnsupported: schemas reaching keywords outside the subset
// get no fast validator, so jsonschema alone decides.
func TestFastValidatorUnsupported(t *testing.T) {
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	const d2019 = `"$schema":"https://json-schema.org/draft/2019-09/schema",`
	cases := []struct {
		reason string
		schema string
	}{
		{reason: "draft-07 asserts format", schema: `{` + d7 + `"type":"object","properties":{"d":{"type":"string","format":"date-time"}}}`},
		{reason: "not", schema: `{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`},
		{reason: "if/then/else", schema: `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`},
		{reason: "contains", schema: `{"type":"object","properties":{"a":{"contains":{"type":"string"}}}}`},
		{reason: "multipleOf", schema: `{"type":"object","properties":{"a":{"multipleOf":0.1}}}`},
		{reason: "dependentSchemas", schema: `{"type":"object","dependentSchemas":{"a":{"required":["b"]}}}`},
		{reason: "dependentRequired", schema: `{"type":"object","dependentRequired":{"a":["b"]}}`},
		{reason: "draft-07 dependencies", schema: `{` + d7 + `"type":"object","dependencies":{"a":["b"]}}`},
		{reason: "propertyNames", schema: `{"type":"object","propertyNames":{"maxLength":3}}`},
		{reason: "unevaluatedProperties", schema: `{"type":"object","allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`},
		{reason: "unevaluatedItems", schema: `{"type":"object","properties":{"a":{"unevaluatedItems":false}}}`},
		{reason: "$dynamicRef", schema: `{"type":"object","$dynamicAnchor":"n","properties":{"a":{"$dynamicRef":"#n"}}}`},
		{reason: "$recursiveRef", schema: `{` + d2019 + `"type":"object","$recursiveAnchor":true,"properties":{"a":{"$recursiveRef":"#"}}}`},
		{reason: "unsupported keyword behind a $ref", schema: `{"type":"object","$defs":{"x":{"not":{}}},"properties":{"a":{"$ref":"#/$defs/x"}}}`},
		{reason: "unsupported keyword deep in items", schema: `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"multipleOf":2}]}}}}`},
		{reason: "reference cycle that does not descend", schema: `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`},
	}
	for _, c := range cases {
		if e := fastEntry(t, c.schema); e.fast != nil {
			t.Errorf("%s: got a fast validator for %s", c.reason, c.schema)
		}
	}
}

// TestFastValidatorSchemaFields guards the mirror: compileFast reads
// jsonschema's compiled Schema, so a library upgrade that adds a field (a
// new keyword) must be reviewed here before the fast path can be trusted.
func TestFastValidatorSchemaFields(t *testing.T) {
	known := []string{"up", "resource", "dynamicAnchors", "allPropsEvaluated", "allItemsEvaluated", "numItemsEvaluated",
		"DraftVersion", "Location", "Bool", "ID", "Ref", "Anchor", "RecursiveRef", "RecursiveAnchor", "DynamicRef", "DynamicAnchor",
		"Types", "Enum", "Const", "Not", "AllOf", "AnyOf", "OneOf", "If", "Then", "Else", "Format",
		"MaxProperties", "MinProperties", "Required", "PropertyNames", "Properties", "PatternProperties", "AdditionalProperties",
		"Dependencies", "DependentRequired", "DependentSchemas", "UnevaluatedProperties",
		"MinItems", "MaxItems", "UniqueItems", "Contains", "MinContains", "MaxContains", "Items", "AdditionalItems", "PrefixItems", "Items2020", "UnevaluatedItems",
		"MinLength", "MaxLength", "Pattern", "ContentEncoding", "ContentMediaType", "ContentSchema",
		"Maximum", "Minimum", "ExclusiveMaximum", "ExclusiveMinimum", "MultipleOf",
		"Extensions", "Title", "Description", "Default", "Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated"}
	var got []string
	st := reflect.TypeFor[jsonschema.Schema]()
	for i := range st.NumField() {
		got = append(got, st.Field(i).Name)
	}
	slices.Sort(got)
	slices.Sort(known)
	if !slices.Equal(got, known) {
		t.Fatalf("jsonschema.Schema fields changed; review compileFast against validator.go:\n got  %v\n want %v", got, known)
	}
}

// A realistic 10-parameter tool (the one BenchmarkValidate uses).
const fastRealSchema = `{"type":"object","additionalProperties":false,"required":["title","board_id","ops"],
 "properties":{
  "title":{"type":"string","minLength":1,"maxLength":200},
  "board_id":{"type":"string","pattern":"^[a-z0-9-]+$"},
  "description":{"type":"string"},
  "priority":{"type":"integer","minimum":0,"maximum":5},
  "ratio":{"type":"number"},
  "archived":{"type":"boolean"},
  "tags":{"type":"array","items":{"type":"string"},"maxItems":20,"uniqueItems":true},
  "owner":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"email":{"type":"string","format":"email"}},"required":["id"]},
  "ops":{"type":"array","items":{"type":"object","required":["op"],"properties":{"op":{"enum":["add","remove","move"]},"card":{"type":"string"},"position":{"type":"integer"}}}},
  "due":{"anyOf":[{"type":"string"},{"type":"null"}]}
 }}`

const fastRealArgs = `{"title":"Quarterly planning: Ember & Oak launch","board_id":"ember-oak-2026-q3",
 "description":"Collect every card for the launch, sort by owner, and move blocked items to the review column before Friday's sync.",
 "priority":3,"ratio":0.75,"archived":false,
 "tags":["launch","q3","partner","marketing","design","review"],
 "owner":{"id":4242,"name":"Ada Lovelace","email":"ada@example.com"},
 "ops":[{"op":"add","card":"Write launch announcement draft","position":1},
        {"op":"move","card":"Finalize pricing page copy","position":2},
        {"op":"remove","card":"Old teaser campaign"}],
 "due":"2026-09-30T17:00:00Z"}`

func TestFastValidateAllocs(t *testing.T) {
	e := fastEntry(t, fastRealSchema)
	if e.fast == nil {
		t.Fatal("realistic schema got no fast validator")
	}
	a := fastArgs(t, fastRealArgs)
	if ve := e.Validate(a, nil); ve != nil {
		t.Fatal(ve)
	}
	if !validFast(e.fast, a) {
		t.Fatal("fast validator declined valid arguments")
	}
	if n := testing.AllocsPerRun(200, func() { _ = e.Validate(a, nil) }); n != 0 {
		t.Fatalf("Validate of valid arguments allocates %v times per call, want 0", n)
	}
}

// --- property test ---

var (
	propKeys    = []string{"a", "b", "c", "é", "x-1"}
	strPool     = []string{"", "a", "ab", "abc", "é", "é😀", "12", "xay", "Hello", "x-1", "aaaa"}
	numPool     = []float64{0, 1, -1, 2, 3, 0.5, 1.5, -2.5, 5, 9007199254740992, 9007199254740994, -9007199254740994, 1e20, 1e300, 0.1, 0.30000000000000004}
	patternPool = []string{"^[a-z]+$", "a", "^é", `^\d{2}$`, "^.{0,2}$", "^x-"}
	typeNames   = []string{"string", "integer", "number", "boolean", "null", "array", "object"}
)

type schemaGen struct {
	t     *rapid.T
	draft int // 4, 6, 7, 2019, 2020
	defs  []string
}

func (g *schemaGen) defsKey() string {
	if g.draft >= 2019 {
		return "$defs"
	}
	return "definitions"
}

func (g *schemaGen) scalar(label string) any {
	switch rapid.IntRange(0, 5).Draw(g.t, label+"-kind") {
	case 0:
		return rapid.SampledFrom(strPool).Draw(g.t, label)
	case 1:
		return rapid.SampledFrom(numPool).Draw(g.t, label)
	case 2:
		return rapid.Bool().Draw(g.t, label)
	case 3:
		return nil
	case 4:
		return []any{rapid.SampledFrom(numPool).Draw(g.t, label)}
	default:
		return map[string]any{"a": rapid.SampledFrom(strPool).Draw(g.t, label)}
	}
}

func (g *schemaGen) schema(depth int) any {
	t := g.t
	if g.draft != 4 && rapid.IntRange(0, 15).Draw(t, "bool-schema") == 0 {
		return rapid.Bool().Draw(t, "bool")
	}
	s := map[string]any{}
	if rapid.IntRange(0, 4).Draw(t, "annot") == 0 {
		s["description"] = "d"
		s["title"] = "t"
		s["x-ext"] = true
		if g.draft == 2020 {
			s["format"] = "email"
		}
	}
	kinds := []string{"string", "integer", "number", "boolean", "null", "multi", "none", "enum", "const"}
	if depth < 3 {
		kinds = append(kinds, "array", "object", "anyOf", "oneOf", "allOf")
	}
	if len(g.defs) > 0 {
		kinds = append(kinds, "ref")
	}
	switch k := rapid.SampledFrom(kinds).Draw(t, "kind"); k {
	case "string", "integer", "number", "boolean", "null":
		s["type"] = k
		g.typed(s, k, depth)
	case "multi":
		ts := rapid.SliceOfNDistinct(rapid.SampledFrom(typeNames), 1, 3, func(s string) string { return s }).Draw(t, "types")
		list := make([]any, len(ts))
		for i, x := range ts {
			list[i] = x
			g.typed(s, x, depth)
		}
		s["type"] = list
	case "none":
		g.typed(s, rapid.SampledFrom(typeNames).Draw(t, "untyped-kw"), depth)
		g.typed(s, rapid.SampledFrom(typeNames).Draw(t, "untyped-kw2"), depth)
	case "array", "object":
		s["type"] = k
		g.typed(s, k, depth)
	case "enum":
		n := rapid.IntRange(1, 4).Draw(t, "enum-n")
		vals := make([]any, n)
		for i := range vals {
			vals[i] = g.scalar("enum")
		}
		s["enum"] = vals
	case "const":
		if g.draft == 4 {
			s["enum"] = []any{g.scalar("const")}
		} else {
			s["const"] = g.scalar("const")
		}
	case "anyOf", "oneOf", "allOf":
		n := rapid.IntRange(1, 3).Draw(t, "n-"+k)
		subs := make([]any, n)
		for i := range subs {
			subs[i] = g.schema(depth + 1)
		}
		s[k] = subs
	case "ref":
		s["$ref"] = "#/" + g.defsKey() + "/" + rapid.SampledFrom(g.defs).Draw(t, "ref")
		if rapid.Bool().Draw(t, "ref-sibling") {
			// Draft < 2019 ignores these; 2019+ applies them.
			if rapid.Bool().Draw(t, "sibling-kind") {
				s["type"] = rapid.SampledFrom(typeNames).Draw(t, "sibling-type")
			} else if g.draft != 4 {
				s["const"] = g.scalar("sibling-const")
			}
		}
	}
	return s
}

// typed adds keywords of type k to s.
func (g *schemaGen) typed(s map[string]any, k string, depth int) {
	t := g.t
	maybe := func(label string) bool { return rapid.IntRange(0, 2).Draw(t, label) == 0 }
	switch k {
	case "string":
		if maybe("minLength") {
			s["minLength"] = float64(rapid.IntRange(0, 3).Draw(t, "minLength"))
		}
		if maybe("maxLength") {
			s["maxLength"] = float64(rapid.IntRange(0, 4).Draw(t, "maxLength"))
		}
		if maybe("pattern") {
			s["pattern"] = rapid.SampledFrom(patternPool).Draw(t, "pattern")
		}
	case "integer", "number":
		for _, kw := range []string{"minimum", "maximum"} {
			if maybe(kw) {
				s[kw] = rapid.SampledFrom(numPool).Draw(t, kw)
				if g.draft == 4 && rapid.Bool().Draw(t, kw+"-excl") {
					s["exclusive"+strings.ToUpper(kw[:1])+kw[1:]] = rapid.Bool().Draw(t, kw+"-excl-val")
				}
			}
		}
		if g.draft != 4 {
			for _, kw := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
				if maybe(kw) {
					s[kw] = rapid.SampledFrom(numPool).Draw(t, kw)
				}
			}
		}
	case "array":
		if depth < 3 {
			switch rapid.IntRange(0, 3).Draw(t, "items-form") {
			case 0:
				s["items"] = g.schema(depth + 1)
			case 1:
				tuple := []any{g.schema(depth + 1), g.schema(depth + 1)}
				if g.draft == 2020 {
					s["prefixItems"] = tuple
					if rapid.Bool().Draw(t, "items-after-prefix") {
						s["items"] = g.schema(depth + 1)
					}
				} else {
					s["items"] = tuple
					if rapid.Bool().Draw(t, "additionalItems") {
						s["additionalItems"] = g.schema(depth + 1)
					}
				}
			case 2:
				if g.draft < 2020 {
					s["additionalItems"] = g.schema(depth + 1)
				}
			}
		}
		if maybe("minItems") {
			s["minItems"] = float64(rapid.IntRange(0, 2).Draw(t, "minItems"))
		}
		if maybe("maxItems") {
			s["maxItems"] = float64(rapid.IntRange(0, 3).Draw(t, "maxItems"))
		}
		if maybe("uniqueItems") {
			s["uniqueItems"] = rapid.Bool().Draw(t, "unique")
		}
	case "object":
		g.object(s, depth)
	}
}

func (g *schemaGen) object(s map[string]any, depth int) {
	t := g.t
	maybe := func(label string) bool { return rapid.IntRange(0, 2).Draw(t, label) == 0 }
	if depth < 3 {
		props := map[string]any{}
		for _, k := range propKeys {
			if rapid.Bool().Draw(t, "prop-"+k) {
				props[k] = g.schema(depth + 1)
			}
		}
		s["properties"] = props
		if maybe("patternProperties") {
			s["patternProperties"] = map[string]any{rapid.SampledFrom(patternPool).Draw(t, "pp"): g.schema(depth + 1)}
		}
		switch rapid.IntRange(0, 3).Draw(t, "addl") {
		case 1:
			s["additionalProperties"] = false
		case 2:
			s["additionalProperties"] = true
		case 3:
			s["additionalProperties"] = g.schema(depth + 1)
		}
	}
	if maybe("required") {
		var req []any
		for _, k := range propKeys {
			if rapid.IntRange(0, 2).Draw(t, "req-"+k) == 0 {
				req = append(req, k)
			}
		}
		if len(req) > 0 {
			s["required"] = req
		}
	}
	if maybe("minProperties") {
		s["minProperties"] = float64(rapid.IntRange(0, 2).Draw(t, "minProperties"))
	}
	if maybe("maxProperties") {
		s["maxProperties"] = float64(rapid.IntRange(0, 3).Draw(t, "maxProperties"))
	}
}

// rootSchema draws a draft, definitions (one of them recursive through
// items, so $ref descends) and an object root.
func rootSchema(t *rapid.T) (map[string]any, int) {
	draft := rapid.SampledFrom([]int{2020, 2020, 2019, 7, 6, 4}).Draw(t, "draft")
	g := &schemaGen{t: t, draft: draft}
	defs := map[string]any{}
	for i := range rapid.IntRange(0, 2).Draw(t, "ndefs") {
		name := fmt.Sprintf("d%d", i)
		defs[name] = g.schema(1)
		g.defs = append(g.defs, name)
	}
	if rapid.Bool().Draw(t, "tree") {
		defs["tree"] = map[string]any{"type": "object", "properties": map[string]any{
			"v":    g.schema(2),
			"kids": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/" + g.defsKey() + "/tree"}},
		}}
		g.defs = append(g.defs, "tree")
	}
	root := map[string]any{"type": "object"}
	g.object(root, 0)
	if len(defs) > 0 {
		root[g.defsKey()] = defs
	}
	switch draft {
	case 4:
		root["$schema"] = "http://json-schema.org/draft-04/schema#"
	case 6:
		root["$schema"] = "http://json-schema.org/draft-06/schema#"
	case 7:
		root["$schema"] = "http://json-schema.org/draft-07/schema#"
	case 2019:
		root["$schema"] = "https://json-schema.org/draft/2019-09/schema"
	default:
		if rapid.Bool().Draw(t, "explicit-2020") {
			root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		}
	}
	return root, draft
}

// instGen draws instances from the schema (near-valid), then mutates them.
// newInstGen draws instances for root, whose definitions sit under $defs
// (or definitions before draft 2019-09).
func newInstGen(rt *rapid.T, root map[string]any, draft int) *instGen {
	defs, _ := root["$defs"].(map[string]any)
	if draft < 2019 {
		defs, _ = root["definitions"].(map[string]any)
	}
	return &instGen{t: rt, defs: defs}
}

// args draws one instance of root, mutated half the time, as a Struct.
func (g *instGen) args(root map[string]any) *structpb.Struct {
	inst := deepCopy(g.value(root, 0)).(map[string]any)
	if rapid.Bool().Draw(g.t, "mutate") {
		inst = g.mutate(inst).(map[string]any)
	}
	args, err := structpb.NewStruct(inst)
	if err != nil {
		g.t.Fatalf("instance to structpb: %v", err)
	}
	return args
}

type instGen struct {
	t    *rapid.T
	defs map[string]any
}

func (g *instGen) junk(label string) any {
	t := g.t
	switch rapid.IntRange(0, 7).Draw(t, label) {
	case 0:
		return rapid.SampledFrom(strPool).Draw(t, label+"-s")
	case 1, 2:
		return rapid.SampledFrom(numPool).Draw(t, label+"-n")
	case 3:
		return rapid.Bool().Draw(t, label+"-b")
	case 4:
		return nil
	case 5:
		return []any{rapid.SampledFrom(numPool).Draw(t, label+"-a"), 1.0}
	case 6:
		return map[string]any{rapid.SampledFrom(propKeys).Draw(t, label+"-k"): rapid.SampledFrom(strPool).Draw(t, label+"-v")}
	default:
		return math.NaN()
	}
}

func (g *instGen) value(s any, depth int) any {
	t := g.t
	m, ok := s.(map[string]any)
	if !ok || depth > 6 || depth > 0 && rapid.IntRange(0, 12).Draw(t, "off-schema") == 0 {
		return g.junk("free")
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return rapid.SampledFrom(e).Draw(t, "enum-pick")
	}
	if c, ok := m["const"]; ok && rapid.IntRange(0, 3).Draw(t, "use-const") > 0 {
		return c
	}
	if ref, ok := m["$ref"].(string); ok && rapid.Bool().Draw(t, "follow-ref") {
		return g.value(g.defs[ref[strings.LastIndex(ref, "/")+1:]], depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if subs, ok := m[k].([]any); ok && len(subs) > 0 {
			return g.value(rapid.SampledFrom(subs).Draw(t, "branch"), depth+1)
		}
	}
	var types []string
	switch ty := m["type"].(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, x.(string))
		}
	default:
		types = typeNames
	}
	switch rapid.SampledFrom(types).Draw(t, "inst-type") {
	case "string":
		return rapid.SampledFrom(strPool).Draw(t, "str")
	case "integer":
		return rapid.SampledFrom([]float64{0, 1, -1, 2, 3, 5, 9007199254740992, 9007199254740994, 1e20}).Draw(t, "int")
	case "number":
		return rapid.SampledFrom(numPool).Draw(t, "num")
	case "boolean":
		return rapid.Bool().Draw(t, "bool")
	case "null":
		return nil
	case "array":
		n := rapid.IntRange(0, 4).Draw(t, "len")
		out := make([]any, n)
		prefix, _ := m["prefixItems"].([]any)
		if tuple, ok := m["items"].([]any); ok {
			prefix = tuple
		}
		for i := range out {
			switch {
			case i < len(prefix):
				out[i] = g.value(prefix[i], depth+1)
			case m["items"] != nil && !isSlice(m["items"]):
				out[i] = g.value(m["items"], depth+1)
			case m["additionalItems"] != nil:
				out[i] = g.value(m["additionalItems"], depth+1)
			default:
				out[i] = g.junk("item")
			}
		}
		return out
	default: // object
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, k := range propKeys {
			ps, declared := props[k]
			if slices.Contains(req, any(k)) || rapid.Bool().Draw(t, "include-"+k) {
				if declared {
					out[k] = g.value(ps, depth+1)
				} else if ap, ok := m["additionalProperties"]; ok && rapid.Bool().Draw(t, "via-addl") {
					out[k] = g.value(ap, depth+1)
				} else {
					out[k] = g.junk("extra")
				}
			}
		}
		return out
	}
}

func isSlice(v any) bool { _, ok := v.([]any); return ok }

// mutate replaces, adds or deletes one thing somewhere in v.
func (g *instGen) mutate(v any) any {
	t := g.t
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		switch op := rapid.IntRange(0, 3).Draw(t, "mut-obj"); {
		case op == 0 || len(keys) == 0:
			x[rapid.SampledFrom(append(propKeys, "zz")).Draw(t, "mut-add")] = g.junk("mut-val")
		case op == 1:
			delete(x, rapid.SampledFrom(keys).Draw(t, "mut-del"))
		default:
			k := rapid.SampledFrom(keys).Draw(t, "mut-into")
			x[k] = g.mutate(x[k])
		}
		return x
	case []any:
		if len(x) == 0 || rapid.IntRange(0, 3).Draw(t, "mut-arr") == 0 {
			return append(x, g.junk("mut-append"))
		}
		i := rapid.IntRange(0, len(x)-1).Draw(t, "mut-idx")
		x[i] = g.mutate(x[i])
		return x
	}
	return g.junk("mut-leaf")
}

// deepCopy keeps mutation from editing schema values (enum/const) that the
// instance shares.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// TestFastValidatorAgreesWithJSONSchema: for random schemas from the
// supported subset (all five drafts) and near-valid random instances, the
// fast validator must agree with jsonschema. Soundness (fast accepts ⇒
// jsonschema accepts) is the requirement; the evaluation is also meant to
// be exact within the subset, which oneOf depends on, so disagreement in
// either direction fails.
func TestFastValidatorAgreesWithJSONSchema(t *testing.T) {
	var schemas, noFast, compileErr, instances, accepted, fastAccepted, missed int
	rapid.Check(t, func(rt *rapid.T) {
		root, draft := rootSchema(rt)
		doc, err := structpb.NewStruct(root)
		if err != nil {
			rt.Fatalf("schema to structpb: %v", err)
		}
		e, cerr := Compile(doc)
		if cerr != nil {
			compileErr++ // e.g. a keyword combination the draft's meta-schema refuses
			return
		}
		schemas++
		if e.fast == nil {
			noFast++
			_, why := compileFast(e.js)
			rt.Fatalf("schema from the supported subset got no fast validator (%v):\n%s", why, mustJSON(root))
		}
		ig := newInstGen(rt, root, draft)
		for range 20 {
			args := ig.args(root)
			instances++
			js := jsonschemaAccepts(e, args)
			fast := validFast(e.fast, args)
			if js {
				accepted++
			}
			if fast {
				fastAccepted++
			}
			if fast && !js {
				rt.Fatalf("UNSOUND: fast accepts what jsonschema refuses (%v)\nschema: %s\nargs: %s",
					e.js.Validate(structToMap(args)), mustJSON(root), protoJSON(args))
			}
			if js && !fast {
				missed++
				rt.Fatalf("fast refuses what jsonschema accepts\nschema: %s\nargs: %s", mustJSON(root), protoJSON(args))
			}
		}
	})
	t.Logf("schemas=%d (compile refused %d, without fast validator %d) instances=%d jsonschema-accepted=%d fast-accepted=%d; jsonschema accepts but fast rejects: %d/%d",
		schemas, compileErr, noFast, instances, accepted, fastAccepted, missed, accepted)
	if instances > 0 && (accepted == 0 || accepted == instances) {
		t.Errorf("instances are all valid or all invalid (%d of %d accepted): the generator is not exercising both sides", accepted, instances)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func protoJSON(s *structpb.Struct) string {
	// NaN cannot be marshalled as JSON; fall back to Go syntax.
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprint(structToMap(s))
	}
	return string(b)
}

// validFast is the fast validator's verdict within the default budget.
func validFast(f *fastSchema, args *structpb.Struct) bool {
	ok, _ := f.valid(context.Background(), args, DefaultMaxSteps)
	return ok
}
