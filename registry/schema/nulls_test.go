package schema

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"

	"github.com/flowdrop/gateway/normalize"
)

func TestDropOptionalNulls(t *testing.T) {
	t.Parallel()
	const defs = `"$defs": {"Place": {"type": "object", "required": ["room"], "properties": {"room": {"type": "string"}, "floor": {"type": "integer"}}}}`
	cases := []struct {
		name, reason, schema, args string
		want                       string   // the arguments after the pass
		dropped                    []string // the repairs' pointers, in order
	}{
		{name: "optional-string", reason: "the case strict mode makes: an optional string property sent as null is removed",
			schema: `{"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}`,
			args:   `{"title": "t", "body": null}`, want: `{"title": "t"}`, dropped: []string{"/body"}},
		{name: "several-sorted", reason: "every optional null goes, reported in key order",
			schema: `{"type": "object", "properties": {"b": {"type": "array"}, "a": {"type": "integer"}, "c": {"type": "boolean"}}}`,
			args:   `{"c": null, "b": null, "a": null}`, want: `{}`, dropped: []string{"/a", "/b", "/c"}},
		{name: "required-kept", reason: "a required property's null is never removed: validation still refuses it",
			schema: `{"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}`,
			args:   `{"title": null}`, want: `{"title": null}`},
		{name: "type-list-with-null", reason: "a schema admitting null by its type list keeps the null",
			schema: `{"type": "object", "properties": {"due": {"type": ["string", "null"]}}}`,
			args:   `{"due": null}`, want: `{"due": null}`},
		{name: "anyof-with-null", reason: "anyOf [string, null] admits null: kept",
			schema: `{"type": "object", "properties": {"due": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}`,
			args:   `{"due": null}`, want: `{"due": null}`},
		{name: "anyof-without-null", reason: "anyOf whose every branch refuses null refuses it",
			schema: `{"type": "object", "properties": {"n": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`,
			args:   `{"n": null}`, want: `{}`, dropped: []string{"/n"}},
		{name: "empty-schema", reason: "{} admits anything, null included: kept",
			schema: `{"type": "object", "properties": {"value": {}}}`,
			args:   `{"value": null}`, want: `{"value": null}`},
		{name: "enum-with-null", reason: "an enum listing null admits it",
			schema: `{"type": "object", "properties": {"mode": {"enum": ["a", null]}}}`,
			args:   `{"mode": null}`, want: `{"mode": null}`},
		{name: "enum-without-null", reason: "an enum without null refuses it, with no type keyword",
			schema: `{"type": "object", "properties": {"mode": {"enum": ["a", "b"]}}}`,
			args:   `{"mode": null}`, want: `{}`, dropped: []string{"/mode"}},
		{name: "const", reason: "a non-null const refuses null",
			schema: `{"type": "object", "properties": {"kind": {"const": "x"}}}`,
			args:   `{"kind": null}`, want: `{}`, dropped: []string{"/kind"}},
		{name: "allof-narrows", reason: "an allOf member refusing null refuses it",
			schema: `{"type": "object", "properties": {"n": {"allOf": [{}, {"type": "number"}]}}}`,
			args:   `{"n": null}`, want: `{}`, dropped: []string{"/n"}},
		{name: "undeclared-kept", reason: "a key no schema declares is not an optional property: kept for validation to refuse",
			schema: `{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}`,
			args:   `{"zzz": null}`, want: `{"zzz": null}`},
		{name: "additional-schema", reason: "an additionalProperties schema declares the other keys",
			schema: `{"type": "object", "additionalProperties": {"type": "string"}}`,
			args:   `{"label": null}`, want: `{}`, dropped: []string{"/label"}},
		{name: "pattern", reason: "a matching patternProperties schema declares the key",
			schema: `{"type": "object", "patternProperties": {"^n_": {"type": "integer"}}}`,
			args:   `{"n_1": null, "other": null}`, want: `{"other": null}`, dropped: []string{"/n_1"}},
		{name: "nested-object", reason: "at any depth: an optional member of a nested object",
			schema: `{"type": "object", "properties": {"where": {"type": "object", "required": ["room"], "properties": {"room": {"type": "string"}, "floor": {"type": "integer"}}}}}`,
			args:   `{"where": {"room": null, "floor": null}}`, want: `{"where": {"room": null}}`, dropped: []string{"/where/floor"}},
		{name: "array-items", reason: "members of objects in an array; a null element is not a property and stays",
			schema: `{"type": "object", "properties": {"people": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}, "tags": {"type": "array", "items": {"type": "string"}}}}`,
			args:   `{"people": [{"name": "a"}, {"name": null}], "tags": ["x", null]}`,
			want:   `{"people": [{"name": "a"}, {}], "tags": ["x", null]}`, dropped: []string{"/people/1/name"}},
		{name: "prefix-items", reason: "prefixItems locate each element's schema",
			schema: `{"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"a": {}}}]}}}`,
			args:   `{"pair": [{"a": null}, {"a": null}]}`, want: `{"pair": [{}, {"a": null}]}`, dropped: []string{"/pair/0/a"}},
		{name: "ref", reason: "$ref to a definition is followed",
			schema: `{"type": "object", ` + defs + `, "properties": {"where": {"$ref": "#/$defs/Place"}}}`,
			args:   `{"where": {"room": "a", "floor": null}}`, want: `{"where": {"room": "a"}}`, dropped: []string{"/where/floor"}},
		{name: "optional-model", reason: "Optional[Model] (anyOf [$ref, null]): for an object only the model's branch can hold, so it applies",
			schema: `{"type": "object", ` + defs + `, "properties": {"where": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]}}}`,
			args:   `{"where": {"room": "a", "floor": null}}`, want: `{"where": {"room": "a"}}`, dropped: []string{"/where/floor"}},
		{name: "two-object-branches", reason: "two object branches: neither certainly applies, so nothing below them is removed",
			schema: `{"type": "object", "properties": {"x": {"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["b"]}]}}}`,
			args:   `{"x": {"a": null}}`, want: `{"x": {"a": null}}`},
		{name: "required-by-allof", reason: "required anywhere that applies counts: another allOf member requires it",
			schema: `{"type": "object", "allOf": [{"properties": {"x": {"type": "string"}}}, {"required": ["x"]}]}`,
			args:   `{"x": null}`, want: `{"x": null}`},
		{name: "required-by-then", reason: "a then branch may require it: kept",
			schema: `{"type": "object", "properties": {"x": {"type": "string"}, "k": {}}, "if": {"required": ["k"]}, "then": {"required": ["x"]}}`,
			args:   `{"x": null}`, want: `{"x": null}`},
		{name: "dependent-required", reason: "dependentRequired may require it: kept",
			schema: `{"type": "object", "properties": {"x": {"type": "string"}, "k": {}}, "dependentRequired": {"k": ["x"]}}`,
			args:   `{"x": null}`, want: `{"x": null}`},
		{name: "draft7-ref-siblings", reason: "draft-07 ignores $ref's siblings, as the validator does: the sibling declaration locates nothing",
			schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"A": {"type": "object"}}, "properties": {"o": {"$ref": "#/definitions/A", "properties": {"x": {"type": "string"}}}}}`,
			args:   `{"o": {"x": null}}`, want: `{"o": {"x": null}}`},
		{name: "dynamic-ref", reason: "below a $dynamicRef (resolved only while validating) nothing is removed; above it, as usual",
			schema: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$dynamicAnchor": "node", "type": "object", "properties": {"x": {"type": "string"}, "child": {"$dynamicRef": "#node"}}}`,
			args:   `{"x": null, "child": {"x": null}}`, want: `{"child": {"x": null}}`, dropped: []string{"/x"}},
		{name: "false-property", reason: "a property the schema forbids (false) admits no null either: treated as absent",
			schema: `{"type": "object", "properties": {"legacy": false}}`,
			args:   `{"legacy": null}`, want: `{}`, dropped: []string{"/legacy"}},
		{name: "pointer-escaping", reason: "keys with / and ~ are escaped in the pointer (RFC 6901)",
			schema: `{"type": "object", "properties": {"a/b~c": {"type": "string"}}}`,
			args:   `{"a/b~c": null}`, want: `{}`, dropped: []string{"/a~1b~0c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := compileJSON(t, tc.schema)
			args := fastArgs(t, tc.args)
			before := proto.Clone(args)
			out, repairs := s.DropOptionalNulls(args)
			if !proto.Equal(args, before) {
				t.Errorf("the input was mutated (%s)", tc.reason)
			}
			if want := fastArgs(t, tc.want); !proto.Equal(out, want) {
				t.Errorf("got %s, want %s (%s)", protoJSON(out), tc.want, tc.reason)
			}
			var got []string
			for _, r := range repairs {
				if r.Kind != normalize.NullDropped {
					t.Errorf("repair kind %v, want null-dropped", r.Kind)
				}
				got = append(got, r.Path)
			}
			if !slices.Equal(got, tc.dropped) {
				t.Errorf("repairs at %v, want %v (%s)", got, tc.dropped, tc.reason)
			}
			if len(tc.dropped) == 0 && out != args {
				t.Errorf("nothing removed, yet a new Struct came back (%s)", tc.reason)
			}
		})
	}
}

// TestDropOptionalNullsWithoutNullsAllocatesNothing: arguments holding no
// null come back as they are, without an allocation (the pass is on the
// call path of every tool the policy turns it on for).
func TestDropOptionalNullsWithoutNullsAllocatesNothing(t *testing.T) {
	s := compileJSON(t, `{"type": "object", "properties": {"a": {"type": "string"}, "o": {"type": "object", "properties": {"l": {"type": "array"}}}}}`)
	args := fastArgs(t, `{"a": "x", "o": {"l": [1, "two", {"three": 3}]}}`)
	var out *structpb.Struct
	allocs := testing.AllocsPerRun(100, func() { out, _ = s.DropOptionalNulls(args) })
	if allocs != 0 || out != args {
		t.Errorf("%v allocations, same Struct %v; want 0 and the same", allocs, out == args)
	}
}

// TestDropOptionalNullsOnlyTurnsRefusedIntoAccepted: on random schemas
// (every draft, $refs, combinators, recursion) and near-valid instances,
// the pass never changes arguments the schema accepts — it removes only
// nulls that make them invalid — and running it again removes nothing more.
func TestDropOptionalNullsOnlyTurnsRefusedIntoAccepted(t *testing.T) {
	var changed int
	rapid.Check(t, func(rt *rapid.T) {
		root, draft := rootSchema(rt)
		doc, err := structpb.NewStruct(root)
		if err != nil {
			rt.Fatalf("schema to structpb: %v", err)
		}
		s, cerr := Compile(doc)
		if cerr != nil {
			return
		}
		ig := newInstGen(rt, root, draft)
		for range 20 {
			args := ig.args(root)
			out, repairs := s.DropOptionalNulls(args)
			if jsonschemaAccepts(s, args) && (out != args || len(repairs) > 0) {
				rt.Fatalf("valid arguments were changed: %v\nschema: %s\nargs: %s", repairs, mustJSON(root), protoJSON(args))
			}
			if len(repairs) > 0 {
				changed++
				again, more := s.DropOptionalNulls(out)
				if len(more) > 0 || again != out {
					rt.Fatalf("a second pass removed %v\nschema: %s\nargs: %s", more, mustJSON(root), protoJSON(args))
				}
			}
		}
	})
	t.Logf("instances changed: %d", changed)
}
