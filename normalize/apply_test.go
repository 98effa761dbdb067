package normalize

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

type applyCase struct {
	reason  string
	schema  string
	args    string
	want    string // normalized args; "" means "same as args"
	repairs []Repair
	skipped []Skip
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p := mustPlan(t, tc.schema)
			args := mustStruct(t, tc.args)
			before := proto.Clone(args)
			got, rep := p.Apply(args)
			want := tc.want
			if want == "" {
				want = tc.args
			}
			if g, w := canonJSON(t, got), canon(t, want); g != w {
				t.Errorf("args:\n got %s\nwant %s", g, w)
			}
			if !reflect.DeepEqual(rep.Repairs, tc.repairs) {
				t.Errorf("repairs:\n got %+v\nwant %+v", rep.Repairs, tc.repairs)
			}
			if !reflect.DeepEqual(rep.Skipped, tc.skipped) {
				t.Errorf("skipped:\n got %+v\nwant %+v", rep.Skipped, tc.skipped)
			}
			if !proto.Equal(args, before) {
				t.Errorf("Apply mutated its input")
			}
			if len(rep.Repairs) == 0 && got != args {
				t.Errorf("no repair but a different Struct came back")
			}
			// ApplyInPlace must reach the same result and report.
			inPlace := proto.Clone(before).(*structpb.Struct)
			rep2 := p.ApplyInPlace(inPlace)
			if g, w := canonJSON(t, inPlace), canon(t, want); g != w {
				t.Errorf("ApplyInPlace args:\n got %s\nwant %s", g, w)
			}
			if !reflect.DeepEqual(rep2, rep) {
				t.Errorf("ApplyInPlace report %+v differs from Apply's %+v", rep2, rep)
			}
		})
	}
}

const opsArray = `{"type":"object","properties":{"ops":{"type":"array"},"title":{"type":"string"}}}`

// Clause 2: decode only when declared array/object, parses, and shape matches.
func TestApplyClause2JSONDecoding(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			reason:  "stringified array for an array parameter is decoded",
			schema:  opsArray,
			args:    `{"ops":"[{\"op\":\"add\"},{\"op\":\"rm\"}]"}`,
			want:    `{"ops":[{"op":"add"},{"op":"rm"}]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "stringified object for an object parameter is decoded",
			schema:  `{"properties":{"cfg":{"type":"object"}}}`,
			args:    `{"cfg":"{\"depth\":2,\"tags\":[\"a\"]}"}`,
			want:    `{"cfg":{"depth":2,"tags":["a"]}}`,
			repairs: []Repair{{Path: "/cfg", Kind: JSONDecoded}},
		},
		{
			reason:  "surrounding JSON whitespace is allowed",
			schema:  opsArray,
			args:    `{"ops":" \n\t[1, 2]\r\n "}`,
			want:    `{"ops":[1,2]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "type list [array,null] declares array",
			schema:  `{"properties":{"ops":{"type":["array","null"]}}}`,
			args:    `{"ops":"[]"}`,
			want:    `{"ops":[]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "anyOf [array, null] (Optional[list[str]]) declares array",
			schema:  `{"properties":{"tags":{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}],"default":null}}}`,
			args:    `{"tags":"[\"x\",\"y\"]"}`,
			want:    `{"tags":["x","y"]}`,
			repairs: []Repair{{Path: "/tags", Kind: JSONDecoded}},
		},
		{
			reason:  "local $ref to $defs is followed",
			schema:  `{"properties":{"ops":{"$ref":"#/$defs/Ops"}},"$defs":{"Ops":{"type":"array"}}}`,
			args:    `{"ops":"[1]"}`,
			want:    `{"ops":[1]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "root $ref to an object definition supplies the properties",
			schema:  `{"$ref":"#/definitions/Args","definitions":{"Args":{"type":"object","properties":{"ops":{"type":"array"}}}}}`,
			args:    `{"ops":"[1]"}`,
			want:    `{"ops":[1]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "root allOf branches supply properties",
			schema:  `{"allOf":[{"properties":{"a":{"type":"array"}}},{"properties":{"b":{"type":"object"}}}]}`,
			args:    `{"a":"[1]","b":"{}"}`,
			want:    `{"a":[1],"b":{}}`,
			repairs: []Repair{{Path: "/a", Kind: JSONDecoded}, {Path: "/b", Kind: JSONDecoded}},
		},
		{
			reason:  "patternProperties apply to names properties does not list",
			schema:  `{"properties":{"title":{"type":"string"}},"patternProperties":{"^list_":{"type":"array"}}}`,
			args:    `{"list_a":"[1]","title":"[1]"}`,
			want:    `{"list_a":[1],"title":"[1]"}`,
			repairs: []Repair{{Path: "/list_a", Kind: JSONDecoded}},
		},
		{
			reason:  "additionalProperties applies when no properties/patternProperties entry does",
			schema:  `{"properties":{"title":{"type":"string"}},"patternProperties":{"^s_":{"type":"string"}},"additionalProperties":{"type":"object"}}`,
			args:    `{"extra":"{\"k\":1}","s_x":"{\"k\":1}"}`,
			want:    `{"extra":{"k":1},"s_x":"{\"k\":1}"}`,
			repairs: []Repair{{Path: "/extra", Kind: JSONDecoded}},
		},
		{
			reason:  "both array and object declared: either shape is accepted",
			schema:  `{"properties":{"v":{"type":["array","object"]}}}`,
			args:    `{"v":"{\"a\":[]}","w":"x"}`,
			want:    `{"v":{"a":[]},"w":"x"}`,
			repairs: []Repair{{Path: "/v", Kind: JSONDecoded}},
		},
		{
			reason:  "keys needing RFC 6901 escaping appear escaped in the path",
			schema:  `{"additionalProperties":{"type":"array"}}`,
			args:    `{"a/b~c":"[1]"}`,
			want:    `{"a/b~c":[1]}`,
			repairs: []Repair{{Path: "/a~1b~0c", Kind: JSONDecoded}},
		},
		{
			reason: "JSON decoding applies to top-level parameters only, not nested strings",
			schema: `{"properties":{"cfg":{"type":"object","properties":{"inner":{"type":"array"}}}}}`,
			args:   `{"cfg":{"inner":"[1]"}}`,
		},
		{
			reason: "a parameter whose value is already an array is left alone",
			schema: opsArray,
			args:   `{"ops":[{"op":"add"}]}`,
		},
		{
			reason:  "number precision that float64 carries (0.1, 9007199254740992, 1e2, 1.0) is decoded",
			schema:  opsArray,
			args:    `{"ops":"[0.1, 9007199254740992, 1e2, 1.0, -0]"}`,
			want:    `{"ops":[0.1, 9007199254740992, 100, 1, -0]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
	})
}

// Clause 3: declared string never decoded; wrong shape / failures pass through.
func TestApplyClause3PassThrough(t *testing.T) {
	skip := func(path, declared string, r SkipReason, got string) []Skip {
		return []Skip{{Path: path, Declared: declared, Reason: r, Got: got}}
	}
	runApplyCases(t, []applyCase{
		{
			reason:  "spec example: object literal for an array parameter is left as sent",
			schema:  `{ "properties": { "ops": { "type": "array" } } }`,
			args:    `{ "ops": "{\"op\":\"add\"}" }`,
			skipped: skip("/ops", "array", WrongShape, "object"),
		},
		{
			reason:  "array literal for an object parameter is left as sent",
			schema:  `{"properties":{"cfg":{"type":"object"}}}`,
			args:    `{"cfg":"[1]"}`,
			skipped: skip("/cfg", "object", WrongShape, "array"),
		},
		{
			reason: "declared string is never decoded",
			schema: `{"properties":{"q":{"type":"string"}}}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "type list including string is declared string",
			schema: `{"properties":{"q":{"type":["array","string"]}}}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "string anywhere in anyOf makes it declared string",
			schema: `{"properties":{"q":{"anyOf":[{"type":"array"},{"$ref":"#/$defs/S"}]}},"$defs":{"S":{"type":"string"}}}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "string in another root allOf branch wins over array",
			schema: `{"allOf":[{"properties":{"q":{"type":"array"}}},{"properties":{"q":{"type":"string"}}}]}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "no type at all (only items) does not declare array",
			schema: `{"properties":{"q":{"items":{"type":"integer"}}}}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "non-local $ref: declared types unknown, never decoded",
			schema: `{"properties":{"q":{"$ref":"https://example.com/ops.json"}}}`,
			args:   `{"q":"[1,2]"}`,
		},
		{
			reason: "undeclared parameter without additionalProperties is never decoded",
			schema: opsArray,
			args:   `{"other":"[1,2]"}`,
		},
		{
			reason: "additionalProperties false declares nothing",
			schema: `{"properties":{},"additionalProperties":false}`,
			args:   `{"other":"[1,2]"}`,
		},
		{
			reason:  "not JSON: left as sent",
			schema:  opsArray,
			args:    `{"ops":"add, remove"}`,
			skipped: skip("/ops", "array", NotJSON, ""),
		},
		{
			reason:  "trailing text after the JSON: not JSON",
			schema:  opsArray,
			args:    `{"ops":"[1] and more"}`,
			skipped: skip("/ops", "array", NotJSON, ""),
		},
		{
			reason:  "trailing comma is not strict JSON",
			schema:  opsArray,
			args:    `{"ops":"[1,2,]"}`,
			skipped: skip("/ops", "array", NotJSON, ""),
		},
		{
			reason:  "double-encoded: the string holds a JSON string",
			schema:  opsArray,
			args:    `{"ops":"\"[1,2]\""}`,
			skipped: skip("/ops", "array", WrongShape, "string"),
		},
		{
			reason:  "null for an array parameter is wrong shape",
			schema:  `{"properties":{"ops":{"type":["array","null"]}}}`,
			args:    `{"ops":"null"}`,
			skipped: skip("/ops", "array", WrongShape, "null"),
		},
		{
			reason:  "a number for an array parameter is wrong shape",
			schema:  opsArray,
			args:    `{"ops":"42"}`,
			skipped: skip("/ops", "array", WrongShape, "number"),
		},
		{
			reason:  "9007199254740993 cannot be carried by float64",
			schema:  opsArray,
			args:    `{"ops":"[9007199254740993]"}`,
			skipped: skip("/ops", "array", LossyNumber, ""),
		},
		{
			reason:  "1e400 overflows float64",
			schema:  opsArray,
			args:    `{"ops":"[1e400]"}`,
			skipped: skip("/ops", "array", LossyNumber, ""),
		},
		{
			reason:  "duplicate key at depth is refused",
			schema:  opsArray,
			args:    `{"ops":"[{\"a\":{\"k\":1,\"k\":2}}]"}`,
			skipped: skip("/ops", "array", DuplicateKey, ""),
		},
		{
			reason:  "duplicate key spelled with an escape is still a duplicate",
			schema:  `{"properties":{"cfg":{"type":"object"}}}`,
			args:    `{"cfg":"{\"a\":1,\"\\u0061\":2}"}`,
			skipped: skip("/cfg", "object", DuplicateKey, ""),
		},
		{
			reason:  "nesting deeper than 100 is refused",
			schema:  opsArray,
			args:    fmt.Sprintf(`{"ops":"%s%s"}`, strings.Repeat("[", 101), strings.Repeat("]", 101)),
			skipped: skip("/ops", "array", TooDeep, ""),
		},
		{
			reason:  "nesting of exactly 100 is accepted",
			schema:  opsArray,
			args:    fmt.Sprintf(`{"ops":"%s%s"}`, strings.Repeat("[", 100), strings.Repeat("]", 100)),
			want:    fmt.Sprintf(`{"ops":%s%s}`, strings.Repeat("[", 100), strings.Repeat("]", 100)),
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}},
		},
		{
			reason:  "lone surrogate escape would need U+FFFD: left as sent",
			schema:  opsArray,
			args:    `{"ops":"[\"\\ud800\"]"}`,
			skipped: skip("/ops", "array", LoneSurrogate, ""),
		},
		{
			reason:  "JSON is judged as sent: entity-escaped JSON is not JSON, but its entities are still decoded",
			schema:  opsArray,
			args:    `{"ops":"[&quot;a&quot;]"}`,
			want:    `{"ops":"[\"a\"]"}`,
			repairs: []Repair{{Path: "/ops", Kind: EntitiesDecoded, Passes: 1}},
			skipped: skip("/ops", "array", NotJSON, ""),
		},
		{
			reason:  "skips are reported in sorted key order",
			schema:  `{"additionalProperties":{"type":"array"}}`,
			args:    `{"b":"x","a":"y","c":"{}"}`,
			skipped: []Skip{{Path: "/a", Declared: "array", Reason: NotJSON}, {Path: "/b", Declared: "array", Reason: NotJSON}, {Path: "/c", Declared: "array", Reason: WrongShape, Got: "object"}},
		},
	})
}

// Clause 4: entity decoding on every string leaf, to a fixed point, bounded.
func TestApplyClause4Entities(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			reason:  "spec example: a title escaped twice resolves fully",
			schema:  `{"properties":{"title":{"type":"string"}}}`,
			args:    `{ "title": "Ember &amp;amp; Oak" }`,
			want:    `{ "title": "Ember & Oak" }`,
			repairs: []Repair{{Path: "/title", Kind: EntitiesDecoded, Passes: 2}},
		},
		{
			reason:  "leaves in lists and nested objects are decoded with full pointers",
			schema:  `{}`,
			args:    `{"ops":[{"title":"a &lt; b"},"x &gt; y"],"cfg":{"n":{"s":"&#169;"}}}`,
			want:    `{"ops":[{"title":"a < b"},"x > y"],"cfg":{"n":{"s":"©"}}}`,
			repairs: []Repair{{Path: "/cfg/n/s", Kind: EntitiesDecoded, Passes: 1}, {Path: "/ops/0/title", Kind: EntitiesDecoded, Passes: 1}, {Path: "/ops/1", Kind: EntitiesDecoded, Passes: 1}},
		},
		{
			reason:  "leaves inside just-decoded JSON are decoded too",
			schema:  opsArray,
			args:    `{"ops":"[{\"title\":\"Ember &amp;amp; Oak\"}]"}`,
			want:    `{"ops":[{"title":"Ember & Oak"}]}`,
			repairs: []Repair{{Path: "/ops", Kind: JSONDecoded}, {Path: "/ops/0/title", Kind: EntitiesDecoded, Passes: 2}},
		},
		{
			reason:  "declared-string parameters get entity decoding regardless of schema",
			schema:  `{"properties":{"cmd":{"type":"string"}}}`,
			args:    `{"cmd":"make &amp;&amp; make test"}`,
			want:    `{"cmd":"make && make test"}`,
			repairs: []Repair{{Path: "/cmd", Kind: EntitiesDecoded, Passes: 1}},
		},
		{
			reason: "legacy references without ';' are not decoded (URLs survive)",
			schema: `{}`,
			args:   `{"url":"https://x.test/?a=1&copy=2&param=3"}`,
		},
		{
			reason: "a bare ampersand is not a reference",
			schema: `{}`,
			args:   `{"q":"Q&A & more"}`,
		},
	})
}

func TestApplyEntityBoundHit(t *testing.T) {
	p := mustPlan(t, `{}`, WithMaxPasses(2))
	args := mustStruct(t, `{"t":"&amp;amp;amp;lt;"}`)
	got, rep := p.Apply(args)
	if g := got.Fields["t"].GetStringValue(); g != "&amp;lt;" {
		t.Errorf("value at the bound = %q, want %q (left after the last allowed pass)", g, "&amp;lt;")
	}
	want := []Repair{{Path: "/t", Kind: EntitiesDecoded, Passes: 2, BoundHit: true}}
	if !reflect.DeepEqual(rep.Repairs, want) {
		t.Errorf("repairs = %+v, want %+v", rep.Repairs, want)
	}
}

// Clause 5: keys never modified; text without references unchanged.
func TestApplyClause5KeysAndPlainText(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			reason:  "keys holding references are not decoded, values are",
			schema:  `{"additionalProperties":{"type":"object"}}`,
			args:    `{"a&amp;b":{"c&lt;d":"&lt;"},"x&quot;":"{\"k&amp;\":\"v&amp;\"}"}`,
			want:    `{"a&amp;b":{"c&lt;d":"<"},"x&quot;":{"k&amp;":"v&"}}`,
			repairs: []Repair{{Path: "/a&amp;b/c&lt;d", Kind: EntitiesDecoded, Passes: 1}, {Path: "/x&quot;", Kind: JSONDecoded}, {Path: "/x&quot;/k&amp;", Kind: EntitiesDecoded, Passes: 1}},
		},
		{
			reason: "text without references comes back identical",
			schema: opsArray,
			args:   `{"title":"plain < text > with \"quotes\"","ops":[{"a":"b"}],"n":1,"b":true,"z":null}`,
		},
	})
}

func TestApplyNoChangeReturnsSameStructWithoutAllocating(t *testing.T) {
	p := mustPlan(t, opsArray)
	args := mustStruct(t, `{"title":"Q&A","ops":[{"op":"add","path":"/a"}],"n":3,"nested":{"l":["x","y"]}}`)
	var got *structpb.Struct
	allocs := testing.AllocsPerRun(100, func() { got, _ = p.Apply(args) })
	if got != args {
		t.Fatalf("Apply returned a different Struct for args needing no repair")
	}
	if allocs != 0 {
		t.Errorf("Apply allocated %v times per run on args needing no repair, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { p.ApplyInPlace(args) }); allocs != 0 {
		t.Errorf("ApplyInPlace allocated %v times per run, want 0", allocs)
	}
	if got, rep := p.Apply(nil); got != nil || rep.Changed() {
		t.Errorf("Apply(nil) = %v, %+v", got, rep)
	}
}

func TestApplySharesOnlyUnchangedSubvalues(t *testing.T) {
	p := mustPlan(t, opsArray)
	args := mustStruct(t, `{"keep":{"a":[1,2]},"fix":{"t":"&lt;"}}`)
	out, _ := p.Apply(args)
	if out == args {
		t.Fatal("expected a copy")
	}
	if out.Fields["keep"] != args.Fields["keep"] {
		t.Errorf("unchanged sibling was copied; it may be shared (copy-on-write)")
	}
	if out.Fields["fix"] == args.Fields["fix"] {
		t.Errorf("changed value shares its container with the input")
	}
	if args.Fields["fix"].GetStructValue().Fields["t"].GetStringValue() != "&lt;" {
		t.Errorf("input mutated")
	}
}

func TestApplyInPlaceMutates(t *testing.T) {
	p := mustPlan(t, opsArray)
	args := mustStruct(t, `{"ops":"[\"&amp;\"]","t":{"x":"&gt;"}}`)
	rep := p.ApplyInPlace(args)
	if g, w := canonJSON(t, args), canon(t, `{"ops":["&"],"t":{"x":">"}}`); g != w {
		t.Errorf("in place: got %s want %s", g, w)
	}
	if len(rep.Repairs) != 3 {
		t.Errorf("repairs = %+v", rep.Repairs)
	}
}

// The plan is shared by every call to a tool: concurrent Apply must be safe
// (run with -race) and every goroutine must get the same answer.
func TestPlanConcurrentApply(t *testing.T) {
	p := mustPlan(t, `{"properties":{"ops":{"type":"array"}},"patternProperties":{"^x":{"type":"object"}}}`)
	args := mustStruct(t, `{"ops":"[{\"t\":\"&amp;amp;\"}]","x1":"{\"a\":1}","t":"&lt;"}`)
	want, wantRep := p.Apply(args)
	wantJSON := canonJSON(t, want)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got, rep := p.Apply(args)
				if canonJSON(t, got) != wantJSON || !reflect.DeepEqual(rep, wantRep) {
					errs <- canonJSON(t, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent Apply differed: %s", e)
	}
}

func TestSkipMessage(t *testing.T) {
	cases := []struct {
		reason string
		skip   Skip
		want   string
	}{
		{"wrong shape names what it parsed as", Skip{Path: "/ops", Declared: "array", Reason: WrongShape, Got: "object"}, "/ops must be an array; got a string that parses as an object"},
		{"wrong shape null has no article", Skip{Path: "/ops", Declared: "array or object", Reason: WrongShape, Got: "null"}, "/ops must be an array or an object; got a string that parses as null"},
		{"wrong shape string", Skip{Path: "/cfg", Declared: "object", Reason: WrongShape, Got: "string"}, "/cfg must be an object; got a string that parses as a string"},
		{"not JSON", Skip{Path: "/ops", Declared: "array", Reason: NotJSON}, "/ops must be an array; got a string that is not JSON"},
		{"lossy number", Skip{Path: "/ids", Declared: "array", Reason: LossyNumber}, "/ids must be an array; got a string holding a number that a float64 cannot carry exactly"},
		{"too deep names the limit", Skip{Path: "/t", Declared: "array", Reason: TooDeep}, "/t must be an array; got a string holding JSON nested deeper than 100 levels"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			if got := tc.skip.Message(); got != tc.want {
				t.Errorf("Message() = %q, want %q", got, tc.want)
			}
		})
	}
}
