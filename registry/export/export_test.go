package export_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/export"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// exportTools are the demo tools plus tools that exercise each rewrite
// and each way of being left out.
func exportTools(t *testing.T) []registry.Tool {
	t.Helper()
	tools, err := registry.ParseTools(demotools.ToolsYAML("127.0.0.1:1"), "demo tools")
	if err != nil {
		t.Fatal(err)
	}
	schema := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Imported from a real gRPC service's descriptors, as `flowdropctl
	// tools import grpc` does: named <prefix><Service>.<Method>.
	src, err := grpcimport.FromDescriptorSet(notestest.DescriptorSet())
	if err != nil {
		t.Fatal(err)
	}
	imported, _, err := grpcimport.Tools(src, grpcimport.Options{Target: "127.0.0.1:1", Prefix: "notes."})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range imported {
		tl, err := toolproto.FromProto(p)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	return append(tools,
		// Gemini: $schema, const, a [T, null] type list and
		// additionalProperties: false are rewritten; strict: optional made
		// required-and-nullable.
		registry.Tool{Name: "set_mode", Description: "Set the mode.", InputSchema: schema(map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false,
			"required": []any{"mode"},
			"properties": map[string]any{
				"mode": map[string]any{"const": "fast", "description": "Only fast."},
				"note": map[string]any{"type": []any{"string", "null"}},
			}})},
		// An exclusive bound is a constraint Gemini cannot express: left out there.
		registry.Tool{Name: "positive", Description: "Takes a positive number.", InputSchema: schema(map[string]any{
			"type": "object", "required": []any{"n"},
			"properties": map[string]any{"n": map[string]any{"type": "number", "exclusiveMinimum": 0}}})},
		// As the gRPC importer emits them: a 64-bit integer (an integer or
		// a decimal string), bytes (contentEncoding, an annotation) and a
		// ListValue (items {}). Gemini: the type list becomes anyOf with
		// each type's keywords, contentEncoding is dropped.
		registry.Tool{Name: "imported_shapes", Description: "Shapes of imported schemas.", InputSchema: schema(map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{
				"id":     map[string]any{"type": []any{"integer", "string"}, "minimum": 0, "pattern": "^(0|[1-9][0-9]*)$", "description": "64-bit."},
				"blob":   map[string]any{"type": "string", "contentEncoding": "base64"},
				"values": map[string]any{"type": "array", "items": map[string]any{}},
			}})},
		// An alias: its own name, description and narrower schema; what it
		// sets (owner) is not in what the model sees.
		registry.Tool{Name: "create_my_note", Description: "Create a note of your own.", InputSchema: schema(map[string]any{
			"type": "object", "additionalProperties": false, "required": []any{"title"},
			"properties": map[string]any{"title": map[string]any{"type": "string", "maxLength": 80}}}),
			Spec: &registry.BackendSpec{Alias: &registry.Alias{Target: "create_note", Injected: map[string]string{"owner": "subject"}}}},
		// A name with a digit first: Gemini wants a letter or '_'.
		registry.Tool{Name: "2fa.Verify", Description: "Verify a code.", InputSchema: schema(map[string]any{
			"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string"}}})},
		// Two tools whose export names meet: neither is served under it,
		// so the dotted one is left out of the provider formats (MCP keeps
		// both names).
		registry.Tool{Name: "clash.op", Description: "Dotted.", InputSchema: schema(map[string]any{"type": "object"})},
		registry.Tool{Name: "clash_op", Description: "Underscored.", InputSchema: schema(map[string]any{"type": "object"})},
		// allOf at the root: Anthropic and strict refuse it (no safe
		// rewrite), plain OpenAI only warns.
		registry.Tool{Name: "composed", Description: "Composed at the root.", InputSchema: schema(map[string]any{
			"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}},
			"allOf": []any{map[string]any{"required": []any{"a"}}}})},
	)
}

// TestExportGolden renders every format and compares it with
// testdata/golden/<format>.json (go test -update rewrites them); each
// document is checked against the provider's documented shape in
// testdata/shapes/<format>.schema.json.
func TestExportGolden(t *testing.T) {
	tools := exportTools(t)
	cases := []struct {
		format  export.Format
		reason  string
		leftOut []string
	}{
		{export.OpenAI, "chat tools as they are, imported ones by their provider-safe names; root allOf is only a warning; a name another tool's export name meets is left out",
			[]string{"clash.op"}},
		{export.OpenAIStrict, "the strict rewrite; free-form objects (a map field, an empty object) and root allOf or not have none",
			[]string{"update_settings", "notes.NotesService.CreateNote", "clash.op", "clash_op", "composed"}},
		{export.Anthropic, "input_schema as registered, names made safe; root allOf is refused by the API", []string{"clash.op", "composed"}},
		{export.Gemini, "the Schema subset: annotations, const, type lists rewritten; exclusive bounds, allOf, not and $ref cannot be",
			[]string{"notes.NotesService.CreateNote", "positive", "clash.op", "composed"}},
		{export.MCP, "inputSchema as registered: MCP takes any JSON Schema object", nil},
	}
	for _, tc := range cases {
		t.Run(string(tc.format), func(t *testing.T) {
			res, err := export.Export(tc.format, tools, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range res.LeftOut {
				names = append(names, l.Name)
				if len(l.Findings) == 0 {
					t.Errorf("%s left out without findings (%s)", l.Name, tc.reason)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.leftOut, ",") {
				t.Errorf("left out %v, want %v (%s)", names, tc.leftOut, tc.reason)
			}
			checkShape(t, tc.format, res.Document)
			if tc.format == export.OpenAIStrict {
				checkAllRequired(t, res.Document)
			}

			var doc any
			if err := json.Unmarshal(res.Document, &doc); err != nil {
				t.Fatal(err)
			}
			var left []map[string]any
			for _, l := range res.LeftOut {
				var fs []string
				for _, f := range l.Findings {
					fs = append(fs, f.String())
				}
				left = append(left, map[string]any{"name": l.Name, "findings": fs})
			}
			got, err := json.MarshalIndent(map[string]any{"tools": doc, "left_out": left}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", string(tc.format)+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (%s); go test -update rewrites it:\n%s", path, tc.reason, got)
			}
		})
	}
}

// checkShape validates doc against the provider's documented shape.
func checkShape(t *testing.T, f export.Format, doc []byte) {
	t.Helper()
	path := filepath.Join("testdata", "shapes", string(f)+".schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := "file:///shapes/" + string(f) + ".schema.json"
	if err := c.AddResource(url, sdoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the %s document does not have the documented shape (%s): %v", f, path, err)
	}
}

// checkAllRequired: in strict mode every property of every object is
// required (what JSON Schema cannot say about itself).
func checkAllRequired(t *testing.T, doc []byte) {
	t.Helper()
	var tools []struct {
		Function struct {
			Name       string
			Parameters map[string]any
		}
	}
	if err := json.Unmarshal(doc, &tools); err != nil {
		t.Fatal(err)
	}
	var walk func(name, at string, s map[string]any)
	walk = func(name, at string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		req := map[string]bool{}
		for _, r := range asList(s["required"]) {
			req[r.(string)] = true
		}
		for k, v := range props {
			if !req[k] {
				t.Errorf("%s: %s/properties/%s is not required", name, at, k)
			}
			if sub, ok := v.(map[string]any); ok {
				walk(name, at+"/properties/"+k, sub)
			}
		}
		if sub, ok := s["items"].(map[string]any); ok {
			walk(name, at+"/items", sub)
		}
		for i, v := range asList(s["anyOf"]) {
			if sub, ok := v.(map[string]any); ok {
				walk(name, at+"/anyOf/"+string(rune('0'+i)), sub)
			}
		}
	}
	for _, tl := range tools {
		walk(tl.Function.Name, "", tl.Function.Parameters)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// TestExportUnknownFormat: a format the package does not know is an error
// naming the ones it does.
func TestExportUnknownFormat(t *testing.T) {
	_, err := export.Export("cohere", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "openai, openai-strict, anthropic, gemini or mcp") {
		t.Fatalf("error %v", err)
	}
}

// TestExportNullableOptional: an openai-strict export names the tools
// whose optional properties the strict rewrite made nullable where the
// registered schema refuses null (the gateway refuses that null unless its
// policy drops optional nulls); other formats, and properties that already
// accepted null, name none.
func TestExportNullableOptional(t *testing.T) {
	t.Parallel()
	byName := map[string]registry.Tool{}
	for _, tl := range exportTools(t) {
		byName[tl.Name] = tl
	}
	tool := func(name, js string) registry.Tool {
		var s structpb.Struct
		if err := s.UnmarshalJSON([]byte(js)); err != nil {
			t.Fatal(err)
		}
		return registry.Tool{Name: name, InputSchema: &s}
	}
	cases := []struct {
		name, reason string
		format       export.Format
		tool         registry.Tool
		want         bool
	}{
		{name: "optional-array", reason: "create_note's optional tags and body become nullable; the tool refuses null",
			format: export.OpenAIStrict, tool: byName["create_note"], want: true},
		{name: "already-nullable", reason: "set_mode's optional note already accepts null; mode is required",
			format: export.OpenAIStrict, tool: byName["set_mode"]},
		{name: "all-required", reason: "positive has no optional property",
			format: export.OpenAIStrict, tool: byName["positive"]},
		{name: "anyof-null-branch", reason: "an optional anyOf that already has a {type: null} branch is left as it is",
			format: export.OpenAIStrict, tool: tool("maybe", `{"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}`)},
		{name: "nested", reason: "an optional property of a nested object counts too",
			format: export.OpenAIStrict, tool: tool("nested", `{"type": "object", "required": ["o"], "properties": {"o": {"type": "object", "properties": {"n": {"type": "integer"}}}}}`), want: true},
		{name: "left-out", reason: "a tool the format leaves out is not in the document, so not named",
			format: export.OpenAIStrict, tool: byName["update_settings"]},
		{name: "not-strict", reason: "plain openai keeps optional properties optional: no null is sent",
			format: export.OpenAI, tool: byName["create_note"]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := export.Export(tc.format, []registry.Tool{tc.tool}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.NullableOptional) == 1 && res.NullableOptional[0] == tc.tool.Name; got != tc.want || len(res.NullableOptional) > 1 {
				t.Errorf("NullableOptional %v, want %s named: %v (%s)", res.NullableOptional, tc.tool.Name, tc.want, tc.reason)
			}
		})
	}
}
