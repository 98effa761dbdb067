package registry_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rschema "github.com/flowdrop/gateway/registry/schema"

	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func compileTool(t testing.TB, js string) *registry.Entry {
	t.Helper()
	e, err := registry.Compile(registry.Tool{Name: "t", Backend: "127.0.0.1:7001", InputSchema: schema(t, js)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// asValidationError is err as the *ValidationError Validate returns for
// invalid arguments, nil for nil; any other error fails the test.
func asValidationError(t testing.TB, err error) *rschema.ValidationError {
	t.Helper()
	if err == nil {
		return nil
	}
	ve, ok := err.(*rschema.ValidationError)
	if !ok {
		t.Fatalf("Validate: %T %v, want *rschema.ValidationError", err, err)
	}
	return ve
}

// The RT-TOOL-8 example: an object literal sent for a parameter declared
// array is left as sent by normalization and validation says why.
func TestValidateSpecExample(t *testing.T) {
	e := compileTool(t, `{"type":"object","properties":{"ops":{"type":"array"}}}`)
	in := args(t, `{"ops":"{\"op\":\"add\"}"}`)
	out, rep := e.Plan.Apply(in)
	ve := asValidationError(t, e.Validate(out, &rep))
	if ve == nil {
		t.Fatal("an object literal for an array parameter was accepted")
	}
	want := rschema.Violation{Pointer: "/ops", Message: "`ops` must be an array; got a string that parses as an object", Keyword: "type"}
	if len(ve.Violations) != 1 || ve.Violations[0] != want {
		t.Fatalf("violations %+v, want [%+v]", ve.Violations, want)
	}
	if got := ve.Error(); got != `invalid arguments for tool "t": `+want.Message {
		t.Fatalf("Error() = %q", got)
	}
}

func TestValidateCarriesRepairs(t *testing.T) {
	e := compileTool(t, `{"type":"object","properties":{"ops":{"type":"array"},"n":{"type":"integer"}}}`)
	out, rep := e.Plan.Apply(args(t, `{"ops":"[1,2]","n":"x"}`))
	ve := asValidationError(t, e.Validate(out, &rep))
	if ve == nil {
		t.Fatal("a string for an integer was accepted")
	}
	if len(ve.Repairs) != 1 || ve.Repairs[0].Path != "/ops" || ve.Repairs[0].Kind != normalize.JSONDecoded {
		t.Fatalf("repairs %+v, want the /ops JSON decoding", ve.Repairs)
	}
	if e.Validate(args(t, `{"ops":[1],"n":3}`), nil) != nil {
		t.Fatal("valid arguments refused")
	}
}

// messageCase is one row of the model-facing message corpus.
type messageCase struct {
	reason string
	schema string
	args   string
	skips  []normalize.Skip
}

// messageCases is the corpus TestValidateMessages pins in a golden file.
func messageCases() []messageCase {
	const board = `{"type":"object","additionalProperties":false,"required":["title"],
		"properties":{
			"title":{"type":"string","minLength":3,"maxLength":10},
			"count":{"type":"integer","minimum":1,"maximum":100},
			"ops":{"type":"array","maxItems":2,"items":{"type":"object","required":["op"],"properties":{"op":{"enum":["add","remove"]},"at":{"type":"integer"}}}},
			"meta":{"type":"object"},
			"ratio":{"type":"number","exclusiveMinimum":0},
			"id":{"type":"string","pattern":"^[a-z]+$"},
			"when":{"anyOf":[{"type":"string"},{"type":"integer"}]},
			"secret":{"const":"fixed"}
		}}`
	return []messageCase{
		{reason: "missing required argument", schema: board, args: `{}`},
		{reason: "integer given a fraction", schema: board, args: `{"title":"abc","count":2.5}`},
		{reason: "integer beyond 2^53", schema: board, args: `{"title":"abc","count":1e20}`},
		{reason: "unknown argument", schema: board, args: `{"title":"abc","colour":"red"}`},
		{reason: "string that parses as an object for an array", schema: board, args: `{"title":"abc","ops":"{\"op\":\"add\"}"}`,
			skips: []normalize.Skip{{Path: "/ops", Declared: "array", Reason: normalize.WrongShape, Got: "object"}}},
		{reason: "string that is not JSON for an object", schema: board, args: `{"title":"abc","meta":"{oops"}`,
			skips: []normalize.Skip{{Path: "/meta", Declared: "object", Reason: normalize.NotJSON}}},
		{reason: "lossy number kept the string", schema: board, args: `{"title":"abc","meta":"{\"n\":9007199254740993}"}`,
			skips: []normalize.Skip{{Path: "/meta", Declared: "object", Reason: normalize.LossyNumber}}},
		{reason: "duplicate key kept the string", schema: board, args: `{"title":"abc","meta":"{\"a\":1,\"a\":2}"}`,
			skips: []normalize.Skip{{Path: "/meta", Declared: "object", Reason: normalize.DuplicateKey}}},
		{reason: "nested errors in array items", schema: board, args: `{"title":"abc","ops":[{"op":"move"},{"at":1.5},{}]}`},
		{reason: "bounds and lengths", schema: board, args: `{"title":"ab","count":0,"ratio":0}`},
		{reason: "string values are not echoed", schema: board, args: `{"title":"much too long a title","id":"hunter2!","secret":"s3cr3t"}`},
		{reason: "anyOf lists each alternative", schema: board, args: `{"title":"abc","when":true}`},
		{reason: "null where an object is required", schema: board, args: `{"title":"abc","meta":null}`},
		{reason: "integer beyond 2^53 inside anyOf", schema: `{"type":"object","properties":{"n":{"anyOf":[{"type":"integer"},{"type":"boolean"}]}}}`, args: `{"n":-1e300}`},
		{reason: "integer|number admits big values", schema: `{"type":"object","properties":{"n":{"type":["integer","number"]}}}`, args: `{"n":1e300}`},
	}
}

// TestValidateMessages pins the model-facing messages in a golden file
// (go test ./registry -run TestValidateMessages -update to rewrite).
func TestValidateMessages(t *testing.T) {
	cases := messageCases()
	var b strings.Builder
	for _, c := range cases {
		e := compileTool(t, c.schema)
		ve := asValidationError(t, e.Validate(args(t, c.args), &normalize.Report{Skipped: c.skips}))
		fmt.Fprintf(&b, "## %s\nargs: %s\n", c.reason, c.args)
		if ve == nil {
			b.WriteString("valid\n\n")
			continue
		}
		fmt.Fprintf(&b, "error: %s\n", ve.Error())
		for _, v := range ve.Violations {
			fmt.Fprintf(&b, "  %q: %s\n", v.Pointer, v.Message)
		}
		b.WriteString("\n")
		// Deterministic: a second run must produce the same violations.
		again := asValidationError(t, e.Validate(args(t, c.args), &normalize.Report{Skipped: c.skips}))
		if fmt.Sprint(again.Violations) != fmt.Sprint(ve.Violations) {
			t.Errorf("%s: violations differ between runs:\n%v\n%v", c.reason, ve.Violations, again.Violations)
		}
		for _, secret := range []string{"hunter2", "s3cr3t", "much too long"} {
			if strings.Contains(ve.Error(), secret) {
				t.Errorf("%s: message echoes a string value: %s", c.reason, ve.Error())
			}
		}
	}
	golden(t, "validate.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestWithoutFastPaths: a registry built WithoutFastPaths compiles every
// tool without them (the entry says so and never accepts on the wire), and
// its entries give the same verdicts and violations as a default
// registry's over the message corpus and the realistic benchmark arguments.
func TestWithoutFastPaths(t *testing.T) {
	fs, ss := memstore.New(), memstore.New()
	defer fs.Close()
	defer ss.Close()
	fast := start(t, fs)
	slow := start(t, ss, registry.WithoutFastPaths())
	if !fast.FastPaths() || slow.FastPaths() {
		t.Fatalf("FastPaths() = %v and %v, want true and false", fast.FastPaths(), slow.FastPaths())
	}
	if len(slow.CompileOptions().Schema) != 1 || len(fast.CompileOptions().Schema) != 0 {
		t.Errorf("CompileOptions().Schema: %d and %d options, want 1 and 0", len(slow.CompileOptions().Schema), len(fast.CompileOptions().Schema))
	}
	corpus := append(messageCases(), messageCase{reason: "realistic valid arguments", schema: benchSchema, args: benchArgs})
	for i, c := range corpus {
		name := fmt.Sprintf("t%d", i)
		tool := registry.Tool{Name: name, Backend: "127.0.0.1:7001", InputSchema: schema(t, c.schema)}
		var entries [2]*registry.Entry
		for j, r := range []*registry.Registry{fast, slow} {
			if _, err := r.Register(context.Background(), tool, registry.RegisterOptions{}); err != nil {
				t.Fatal(err)
			}
			e, ok := r.Lookup(name)
			if !ok {
				t.Fatalf("%s: not found after Register", c.reason)
			}
			entries[j] = e
		}
		if !entries[0].FastPaths() || entries[1].FastPaths() {
			t.Errorf("%s: entry FastPaths() = %v and %v, want true and false", c.reason, entries[0].FastPaths(), entries[1].FastPaths())
		}
		a := args(t, c.args)
		rep := &normalize.Report{Skipped: c.skips}
		got, want := entries[1].Validate(a, rep), entries[0].Validate(a, rep)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: without fast paths %v; with %v", c.reason, got, want)
		}
		b, err := proto.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if entries[1].FastValidWire(b) {
			t.Errorf("%s: FastValidWire accepted without fast paths", c.reason)
		}
		if c.args == benchArgs && (!entries[0].FastValidWire(b) || want != nil) {
			t.Errorf("%s: with fast paths, not accepted (wire %v, Validate %v)", c.reason, entries[0].FastValidWire(b), want)
		}
	}
}
