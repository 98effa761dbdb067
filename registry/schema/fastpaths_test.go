package schema

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

// samePaths fails unless Validate with fast paths (on) and without (off)
// return the same verdict and the same violations for args, and unless off
// never accepts on the wire.
func samePaths(t interface {
	Helper()
	Errorf(string, ...any)
	Fatal(...any)
}, what string, on, off *Schema, args *structpb.Struct) {
	t.Helper()
	if a, b := on.Validate(args, nil), off.Validate(args, nil); !reflect.DeepEqual(a, b) {
		t.Errorf("%s: with fast paths %v; without %v", what, a, b)
	}
	b, err := proto.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if off.FastValidWire(b) {
		t.Errorf("%s: FastValidWire accepted with fast paths off", what)
	}
}

// TestFastPathsSwitch: WithoutFastPaths compiles no fast validator, and
// the general path alone gives the same verdicts and violations as the fast
// paths with it — over the table of fastCases, the wire cases and random
// schemas with near-valid instances.
func TestFastPathsSwitch(t *testing.T) {
	for _, c := range fastCases() {
		on, off := compileJSON(t, c.schema), compileJSON(t, c.schema, WithoutFastPaths())
		if !on.FastPaths() || !on.HasFastValidator() || off.FastPaths() || off.HasFastValidator() {
			t.Errorf("%s: on: fast paths %v validator %v; off: %v %v, want true true false false",
				c.reason, on.FastPaths(), on.HasFastValidator(), off.FastPaths(), off.HasFastValidator())
		}
		samePaths(t, c.reason, on, off, c.arguments(t))
	}

	wire := `{"type":"object","required":["title","tags"],"additionalProperties":false,"properties":{
		"title":{"type":"string","minLength":1,"pattern":"^[A-Z]"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5},
		"prio":{"enum":["low","high"]},"n":{"type":"integer","minimum":0},"meta":{"type":"object","maxProperties":4}}}`
	on, off := compileJSON(t, wire), compileJSON(t, wire, WithoutFastPaths())
	for _, c := range []struct{ reason, args string }{
		{"valid arguments the wire path accepts", `{"title":"Ember & Oak","tags":["a","b"],"prio":"low","n":3,"meta":{"x":1,"y":[true,null]}}`},
		{"a pattern mismatch", `{"title":"ember","tags":[]}`},
		{"too many tags and an unknown argument", `{"title":"E","tags":["a","b","c","d","e","f"],"x":1}`},
	} {
		samePaths(t, c.reason, on, off, fastArgs(t, c.args))
	}
	if !on.FastValidWire(mustMarshal(t, `{"title":"Ember & Oak","tags":["a","b"]}`)) {
		t.Error("with fast paths on, FastValidWire does not accept valid arguments")
	}

	rapid.Check(t, func(rt *rapid.T) {
		root, draft := rootSchema(rt)
		doc, err := structpb.NewStruct(root)
		if err != nil {
			rt.Fatalf("schema to structpb: %v", err)
		}
		on, err := Compile(doc)
		if err != nil {
			return
		}
		off, err := Compile(doc, WithoutFastPaths())
		if err != nil {
			rt.Fatalf("compiles with fast paths, not without: %v", err)
		}
		ig := newInstGen(rt, root, draft)
		for range 10 {
			args := ig.args(root)
			samePaths(rt, "schema "+mustJSON(root)+" args "+protoJSON(args), on, off, args)
		}
	})
}
