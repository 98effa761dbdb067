package lint

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func mustSchema(t testing.TB, src string) *structpb.Struct {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatalf("bad test schema %s: %v", src, err)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// want names one finding by where, what and how bad.
type want struct {
	path, rule string
	sev        Severity
}

func (w want) String() string { return fmt.Sprintf("%s %s %s", w.sev, w.path, w.rule) }

func keyOf(f Finding) want { return want{f.Path, f.Rule, f.Severity} }

// lintRow is one table row. When exact is set, the findings must be exactly
// wants (in order); otherwise each want must be present and each absent rule
// must not fire at all.
type lintRow struct {
	reason  string
	name    string
	schema  string
	profile Profile
	wants   []want
	absent  []string
	exact   bool
}

func runRows(t *testing.T, rows []lintRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(string(r.profile)+"/"+r.reason, func(t *testing.T) {
			name := r.name
			if name == "" {
				name = "some_tool"
			}
			got := Lint(name, mustSchema(t, r.schema), r.profile)
			var keys []want
			for _, f := range got {
				if f.Profile != r.profile {
					t.Errorf("finding for profile %s when only %s was asked: %v", f.Profile, r.profile, f)
				}
				if f.Message == "" {
					t.Errorf("finding without a message: %v", f)
				}
				keys = append(keys, keyOf(f))
			}
			if r.exact {
				if !reflect.DeepEqual(keys, r.wants) {
					t.Fatalf("reason: %s\ngot  %v\nwant %v", r.reason, keys, r.wants)
				}
				return
			}
			for _, w := range r.wants {
				if !containsWant(keys, w) {
					t.Errorf("reason: %s\nmissing %v\ngot %v", r.reason, w, keys)
				}
			}
			for _, rule := range r.absent {
				for _, k := range keys {
					if k.rule == rule {
						t.Errorf("reason: %s\nrule %s must not fire, got %v", r.reason, rule, k)
					}
				}
			}
		})
	}
}

func containsWant(keys []want, w want) bool {
	for _, k := range keys {
		if k == w {
			return true
		}
	}
	return false
}

const err, warn = SeverityError, SeverityWarning

// A Python tool typed `tags: list` becomes {"type": "array"} with no items.
const pythonList = `{"type":"object","properties":{"tags":{"type":"array"},"n":{"type":"integer"}},"required":["tags","n"],"additionalProperties":false}`

// pydantic's Optional[int] = None.
const pydanticOptional = `{"type":"object","title":"Args","properties":{"limit":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"Limit"}}}`

// An MCP server's zod-to-json-schema output.
const mcpSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

// A schema every OpenAI strict rule accepts.
const strictClean = `{"type":"object","properties":{"q":{"type":"string"},"unit":{"type":["string","null"],"enum":["C","F",null]},"rows":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"],"additionalProperties":false}}},"required":["q","unit","rows"],"additionalProperties":false}`

// A schema Gemini's Schema message accepts.
const geminiClean = `{"type":"object","properties":{"city":{"type":"string","description":"City"},"unit":{"type":"string","enum":["C","F"],"nullable":true},"days":{"type":"array","items":{"type":"integer"},"maxItems":7}},"required":["city"]}`

func TestLintOpenAI(t *testing.T) {
	runRows(t, []lintRow{
		{reason: "python list without items is rejected as 'array schema missing items'", schema: pythonList, profile: OpenAI,
			wants: []want{{"/properties/tags", "array-items-required", err}}, exact: true},
		{reason: "array nested in items without its own items is found at its own path", profile: OpenAI,
			schema: `{"type":"object","properties":{"values":{"type":"array","items":{"type":"array"}}}}`,
			wants:  []want{{"/properties/values/items", "array-items-required", err}}, exact: true},
		{reason: "a type list that includes array still needs items", profile: OpenAI,
			schema: `{"type":"object","properties":{"v":{"type":["array","null"]}}}`,
			wants:  []want{{"/properties/v", "array-items-required", err}}, exact: true},
		{reason: "the registry allows '.', OpenAI function names do not", name: "files.read", profile: OpenAI,
			schema: `{"type":"object","properties":{}}`,
			wants:  []want{{"/name", "name-pattern", err}}, exact: true},
		{reason: "65 characters exceeds OpenAI's 64", name: strings.Repeat("a", 65), profile: OpenAI,
			schema: `{"type":"object","properties":{}}`,
			wants:  []want{{"/name", "name-pattern", err}}, exact: true},
		{reason: "root without type object: 'schema must be a JSON Schema of type: object'", profile: OpenAI,
			schema: `{"properties":{"a":{"type":"string"}}}`,
			wants:  []want{{"", "root-type-object", err}}, exact: true},
		{reason: "root typed array is not an object schema", profile: OpenAI,
			schema: `{"type":"array","items":{"type":"string"}}`,
			wants:  []want{{"/type", "root-type-object", err}}, exact: true},
		{reason: "external $ref cannot be followed by the provider", profile: OpenAI,
			schema: `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
			wants:  []want{{"/properties/a/$ref", "ref-external", err}}, exact: true},
		{reason: "a dangling local $ref is reported, a resolvable one is not", profile: OpenAI,
			schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"$ref":"#/$defs/B"}},"$defs":{"A":{"type":"string"}}}`,
			wants:  []want{{"/properties/b/$ref", "ref-unresolved", err}}, exact: true},
		{reason: "root anyOf is only a warning outside strict mode", profile: OpenAI,
			schema: `{"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"required":["a"]}]}`,
			wants:  []want{{"/anyOf", "root-composition", warn}}, exact: true},
		{reason: "strict-only rules do not fire without strict", schema: pydanticOptional, profile: OpenAI,
			absent: []string{"strict-required", "strict-additional-properties", "strict-unsupported-keyword"}},
	})
}

func TestLintOpenAIStrict(t *testing.T) {
	deep := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	for i := 0; i < 10; i++ {
		deep = `{"type":"object","properties":{"n":` + deep + `},"required":["n"],"additionalProperties":false}`
	}
	runRows(t, []lintRow{
		{reason: "a schema inside the documented subset has no findings", schema: strictClean, profile: OpenAIStrict, exact: true},
		{reason: "pydantic Optional: not required, no additionalProperties, default outside subset", schema: pydanticOptional, profile: OpenAIStrict,
			wants: []want{
				{"", "strict-additional-properties", err},
				{"/properties/limit", "strict-required", err},
				{"/properties/limit/default", "strict-unsupported-keyword", warn},
			}, exact: true},
		{reason: "additionalProperties true is as bad as missing", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":true}`,
			wants:  []want{{"/additionalProperties", "strict-additional-properties", err}}, exact: true},
		{reason: "nested objects inside arrays need additionalProperties false too", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"r":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}}},"required":["r"],"additionalProperties":false}`,
			wants:  []want{{"/properties/r/items", "strict-additional-properties", err}}, exact: true},
		{reason: "allOf/not/if are documented unsupported; minLength only doubtful", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"a":{"type":"string","minLength":1,"not":{"const":""}},"b":{"allOf":[{"type":"string"}]}},"required":["a","b"],"additionalProperties":false}`,
			wants: []want{
				{"/properties/a/minLength", "strict-unsupported-keyword", warn},
				{"/properties/a/not", "strict-unsupported-keyword", err},
				{"/properties/b/allOf", "strict-unsupported-keyword", err},
			}},
		{reason: "root anyOf is not allowed in strict mode", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{},"additionalProperties":false,"anyOf":[{"type":"object"}]}`,
			wants:  []want{{"/anyOf", "root-composition", err}}},
		{reason: "$ref with a description sibling: '$ref cannot have keywords {description}'", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A","description":"x"}},"required":["a"],"additionalProperties":false,"$defs":{"A":{"type":"string"}}}`,
			wants:  []want{{"/properties/a/$ref", "ref-siblings", err}}, exact: true},
		{reason: "recursion through $defs terminates and lints the definition in place", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"required":["n"],"additionalProperties":false,"$defs":{"N":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/N"},{"type":"null"}]},"v":{"type":"string"}},"required":["next"],"additionalProperties":false}}}`,
			wants:  []want{{"/$defs/N/properties/v", "strict-required", err}}, exact: true},
		{reason: "recursion to the root with # is allowed", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"child":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["child"],"additionalProperties":false}`,
			exact:  true},
		{reason: "11 levels of object nesting exceeds the limit of 10 (and the older 5)", schema: deep, profile: OpenAIStrict,
			wants: []want{
				{strings.Repeat("/properties/n", 5), "strict-nesting-depth", warn},
				{strings.Repeat("/properties/n", 10), "strict-nesting-depth", err},
			}, exact: true},
		{reason: "free-form object without properties", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":false}},"required":["meta"],"additionalProperties":false}`,
			wants:  []want{{"/properties/meta", "strict-object-properties", err}}, exact: true},
		{reason: "undocumented string format is a warning", profile: OpenAIStrict,
			schema: `{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"required":["u"],"additionalProperties":false}`,
			wants:  []want{{"/properties/u/format", "strict-format", warn}}, exact: true},
	})
}

func TestLintAnthropic(t *testing.T) {
	runRows(t, []lintRow{
		{reason: "a plain 2020-12 object schema is fine", schema: pydanticOptional, profile: Anthropic, exact: true},
		{reason: "top-level anyOf: 'input_schema does not support oneOf, allOf, or anyOf at the top level'", profile: Anthropic,
			schema: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			wants:  []want{{"/anyOf", "root-composition", err}}, exact: true},
		{reason: "oneOf inside a property is fine", profile: Anthropic,
			schema: `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			exact:  true},
		{reason: "draft-3 'required: true' is not JSON Schema 2020-12", profile: Anthropic,
			schema: `{"type":"object","properties":{"a":{"type":"string","required":true}}}`,
			wants:  []want{{"/properties/a/required", "schema-invalid-2020-12", err}}, exact: true},
		{reason: "an unknown type name is not JSON Schema 2020-12", profile: Anthropic,
			schema: `{"type":"object","properties":{"d":{"type":"date"}}}`,
			wants:  []want{{"/properties/d/type", "schema-invalid-2020-12", err}}},
		{reason: "array without items is accepted but warned about", schema: pythonList, profile: Anthropic,
			wants: []want{{"/properties/tags", "array-items-required", warn}}, exact: true},
		{reason: "names with '.' are rejected: 'String should match pattern ^[a-zA-Z0-9_-]{1,64}$'", name: "service.doSomething", profile: Anthropic,
			schema: `{"type":"object"}`,
			wants:  []want{{"/name", "name-pattern", err}}, exact: true},
		{reason: "a 100-character name is beyond the documented 64 but within the API's 128", name: strings.Repeat("x", 100), profile: Anthropic,
			schema: `{"type":"object"}`,
			wants:  []want{{"/name", "name-length", warn}}, exact: true},
		{reason: "root type must be object", profile: Anthropic, schema: `{"type":"string"}`,
			wants: []want{{"/type", "root-type-object", err}}},
	})
}

func TestLintGemini(t *testing.T) {
	runRows(t, []lintRow{
		{reason: "a schema within the OpenAPI subset has no findings", schema: geminiClean, profile: Gemini, exact: true},
		{reason: "MCP schema with $schema and additionalProperties: 'Unknown name ... Cannot find field'", schema: mcpSchema, profile: Gemini,
			wants: []want{
				{"/$schema", "gemini-unsupported-keyword", err},
				{"/additionalProperties", "gemini-unsupported-keyword", err},
			}, exact: true},
		{reason: "python list without items: 'items: missing field'", schema: pythonList, profile: Gemini,
			wants: []want{{"/properties/tags", "array-items-required", err}}},
		{reason: "pydantic Optional as a type list: 'Proto field is not repeating, cannot start list'", profile: Gemini,
			schema: `{"type":"object","properties":{"limit":{"type":["integer","null"]}}}`,
			wants:  []want{{"/properties/limit/type", "gemini-type-list", err}}, exact: true},
		{reason: "pydantic Optional as anyOf with null: version-dependent, so warnings", schema: pydanticOptional, profile: Gemini,
			wants: []want{
				{"/properties/limit/anyOf", "gemini-anyof-siblings", warn},
				{"/properties/limit/anyOf/1/type", "gemini-type-null", warn},
			}, exact: true},
		{reason: "integer enum: 'enum: only allowed for STRING type'", profile: Gemini,
			schema: `{"type":"object","properties":{"mode":{"type":"integer","enum":[0,1]}}}`,
			wants: []want{
				{"/properties/mode/enum", "gemini-enum-non-string", err},
				{"/properties/mode/enum/0", "gemini-enum-non-string", err},
				{"/properties/mode/enum/1", "gemini-enum-non-string", err},
			}, exact: true},
		{reason: "const, oneOf and $ref have no Schema field", profile: Gemini,
			schema: `{"type":"object","properties":{"k":{"type":"string","const":"a"},"u":{"oneOf":[{"type":"string"}]},"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"type":"string"}}}`,
			wants: []want{
				{"/$defs", "gemini-unsupported-keyword", err},
				{"/properties/k/const", "gemini-unsupported-keyword", err},
				{"/properties/u/oneOf", "gemini-unsupported-keyword", err},
				{"/properties/r/$ref", "gemini-unsupported-keyword", err},
			}, absent: []string{"ref-unresolved", "ref-external"}},
		{reason: "properties on a string: 'properties: only allowed for OBJECT type'", profile: Gemini,
			schema: `{"type":"object","properties":{"data":{"type":"string","properties":{"x":{"type":"string"}}}}}`,
			wants:  []want{{"/properties/data/properties", "gemini-object-keyword", err}}},
		{reason: "empty properties: 'should be non-empty for OBJECT type' on some models", profile: Gemini,
			schema: `{"type":"object","properties":{}}`,
			wants:  []want{{"", "gemini-object-empty", warn}}, exact: true},
		{reason: "dots are allowed in Gemini names, a leading digit is not", name: "1files.read", profile: Gemini,
			schema: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			wants:  []want{{"/name", "name-pattern", err}}, exact: true},
		{reason: "dotted names are fine for Gemini", name: "files.read", profile: Gemini,
			schema: `{"type":"object","properties":{"a":{"type":"string"}}}`, exact: true},
		{reason: "a boolean subschema cannot be a Schema message", profile: Gemini,
			schema: `{"type":"object","properties":{"any":true}}`,
			wants:  []want{{"/properties/any", "gemini-boolean-schema", err}}},
	})
}

func TestJSONPointerEscaping(t *testing.T) {
	// "a/b" and "m~n" must appear as a~1b and m~0n (RFC 6901), and a $ref
	// written with those escapes must resolve.
	s := mustSchema(t, `{"type":"object","properties":{"a/b":{"type":"array"},"m~n":{"$ref":"#/$defs/x~1y"}},"$defs":{"x/y":{"type":"string"}}}`)
	got := Lint("t", s, OpenAI)
	expected := []want{{"/properties/a~1b", "array-items-required", err}}
	var keys []want
	for _, f := range got {
		keys = append(keys, keyOf(f))
	}
	if !reflect.DeepEqual(keys, expected) {
		t.Fatalf("got %v want %v", keys, expected)
	}
	// Every reported path resolves to a value in the schema.
	doc := structpb.NewStructValue(s)
	if _, ok := resolvePointer(doc, got[0].Path); !ok {
		t.Fatalf("path %q does not resolve in the schema", got[0].Path)
	}
}

func TestLintOrderAndProfiles(t *testing.T) {
	s := mustSchema(t, pythonList)
	all := Lint("files.read", s)
	if len(all) == 0 {
		t.Fatal("no findings")
	}
	// Grouped by profile in Profiles() order when none are given.
	order := map[Profile]int{}
	for i, p := range Profiles() {
		order[p] = i
	}
	for i := 1; i < len(all); i++ {
		if order[all[i-1].Profile] > order[all[i].Profile] {
			t.Fatalf("profiles out of order at %d: %v then %v", i, all[i-1], all[i])
		}
	}
	// Deterministic: the same input gives the same findings.
	for i := 0; i < 20; i++ {
		if again := Lint("files.read", s); !reflect.DeepEqual(all, again) {
			t.Fatalf("run %d differs", i)
		}
	}
	// Profiles given explicitly come in the order given, duplicates once.
	two := Lint("files.read", s, Gemini, OpenAI, Gemini)
	if two[0].Profile != Gemini || two[len(two)-1].Profile != OpenAI {
		t.Fatalf("want gemini findings first and openai last: %v", two)
	}
	seen := map[string]int{}
	for _, f := range two {
		seen[f.String()]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Fatalf("duplicate finding %q", k)
		}
	}
}

func TestLintUnknownProfileAndNilSchema(t *testing.T) {
	fs := Lint("t", mustSchema(t, `{"type":"object"}`), Profile("mistral"))
	if len(fs) != 1 || fs[0].Rule != "unknown-profile" || !HasErrors(fs) {
		t.Fatalf("got %v", fs)
	}
	fs = Lint("t", nil, Anthropic)
	if len(fs) != 1 || fs[0].Rule != "root-type-object" {
		t.Fatalf("nil schema: got %v", fs)
	}
}

func TestHasErrors(t *testing.T) {
	rows := []struct {
		reason string
		in     []Finding
		want   bool
	}{
		{"no findings", nil, false},
		{"warnings only", []Finding{{Severity: SeverityWarning}}, false},
		{"one error among warnings", []Finding{{Severity: SeverityWarning}, {Severity: SeverityError}}, true},
	}
	for _, r := range rows {
		if got := HasErrors(r.in); got != r.want {
			t.Errorf("%s: got %v want %v", r.reason, got, r.want)
		}
	}
}

func TestParseProfile(t *testing.T) {
	for _, p := range Profiles() {
		if got, ok := ParseProfile(string(p)); !ok || got != p {
			t.Errorf("ParseProfile(%q) = %q, %v", p, got, ok)
		}
	}
	if _, ok := ParseProfile("OpenAI"); ok {
		t.Error("profile names are case-sensitive")
	}
}

func TestStrictBudgets(t *testing.T) {
	// 101 properties: above the old limit of 100, below 5000.
	var b strings.Builder
	var req []string
	b.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	for i := 0; i < 101; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		req = append(req, fmt.Sprintf("%q", fmt.Sprintf("p%d", i)))
	}
	b.WriteString(`},"required":[` + strings.Join(req, ",") + `]}`)
	fs := Lint("t", mustSchema(t, b.String()), OpenAIStrict)
	if len(fs) != 1 || fs[0].Rule != "strict-property-count" || fs[0].Severity != SeverityWarning {
		t.Fatalf("got %v", fs)
	}

	// 1001 enum values exceed the limit of 1000.
	vals := make([]string, 1001)
	for i := range vals {
		vals[i] = fmt.Sprintf("%q", fmt.Sprintf("v%d", i))
	}
	src := `{"type":"object","additionalProperties":false,"required":["e"],"properties":{"e":{"type":"string","enum":[` + strings.Join(vals, ",") + `]}}}`
	fs = Lint("t", mustSchema(t, src), OpenAIStrict)
	if len(fs) != 1 || fs[0].Rule != "strict-enum-count" || !HasErrors(fs) {
		t.Fatalf("got %v", fs)
	}
}

// Registration may lint from many goroutines; run under -race.
func TestLintConcurrent(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{"a":{"type":"string","required":true},"b":{"type":"array"}}}`)
	want := Lint("t", s)
	done := make(chan []Finding)
	for i := 0; i < 8; i++ {
		go func() { done <- Lint("t", s) }()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Fatalf("concurrent run differs:\n%v\n%v", got, want)
		}
	}
}

func BenchmarkLintAllProfiles(b *testing.B) {
	s := mustSchema(b, strictClean)
	b.ReportAllocs()
	for b.Loop() {
		Lint("get_weather", s)
	}
}
