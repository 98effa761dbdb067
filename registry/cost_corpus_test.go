package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/openapiimport"
	jsonschema "github.com/flowdrop/gateway/registry/schema"
)

// schemaKeys are the keys under which the fixtures hold a JSON Schema.
var schemaKeys = map[string]bool{"input_schema": true, "inputSchema": true, "output_schema": true, "outputSchema": true,
	"schema": true, "parameters": true, "response_schema": true}

// TestCostOfRealSchemas: every schema the repository's fixtures hold — tools
// files, provider-lint and normalization cases, export shapes, the schemas
// derived from the notes service's descriptors, and the tools imported from
// the OpenAPI fixtures (petstore, Swagger 2.0) — is within the default
// evaluation bound (jsonschema.DefaultMaxEvaluations), with room to spare: the
// bound refuses explosive schemas, never real ones.
func TestCostOfRealSchemas(t *testing.T) {
	var worst uint64
	var worstAt string
	compiled := 0
	check := func(where string, doc *structpb.Struct) {
		t.Helper()
		s, err := jsonschema.Compile(doc)
		var ce *jsonschema.CompileError
		if errors.As(err, &ce) && strings.Contains(ce.Reason, "max_schema_evaluations") {
			t.Errorf("%s: refused by the evaluation bound: %v", where, err)
			return
		}
		if err != nil {
			return // a fixture of a bad schema: its own test's business
		}
		compiled++
		if b := s.EvaluationBound(); b > worst {
			worst, worstAt = b, where
		}
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if m, ok := x.(map[string]any); ok && schemaKeys[k] {
					if doc, err := structpb.NewStruct(m); err == nil {
						check(where+"/"+k, doc)
					}
				}
				walk(where+"/"+k, x)
			}
		case []any:
			for _, x := range v {
				walk(where, x)
			}
		}
	}
	for _, dir := range []string{"testdata", "lint/testdata", "export/testdata", "../normalize/testdata/golden",
		"../server/testdata", "../cmd/flowdropctl/testdata", "../internal/protoschema/testdata", "../internal/policy/testdata"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			ext := filepath.Ext(path)
			if ext != ".json" && ext != ".yaml" && ext != ".yml" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var v any
			if yaml.Unmarshal(data, &v) != nil {
				return nil
			}
			if m, ok := v.(map[string]any); ok && (m["$schema"] != nil || m["type"] != nil) {
				if doc, err := structpb.NewStruct(m); err == nil {
					check(path, doc)
				}
			}
			walk(path, v)
			if strings.Contains(path, "openapi") || strings.Contains(path, "swagger") {
				doc, err := openapiimport.Load(context.Background(), data)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				tools, _, err := openapiimport.Tools(doc, openapiimport.Options{BaseURL: "http://127.0.0.1:1"})
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				for _, tl := range tools {
					check(path+" › "+tl.GetName(), tl.GetInputSchema())
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	set, err := os.ReadFile("../internal/protoschema/testdata/notes.binpb")
	if err != nil {
		t.Fatal(err)
	}
	src, err := grpcimport.FromDescriptorSet(set)
	if err != nil {
		t.Fatal(err)
	}
	tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		check("notes.binpb › "+tl.GetName(), tl.GetInputSchema())
	}
	if compiled < 40 {
		t.Errorf("only %d fixture schemas compiled; the walk missed the fixtures", compiled)
	}
	if worst*10 > jsonschema.DefaultMaxEvaluations {
		t.Errorf("%s costs %d evaluations per value: within 10× of the bound %d", worstAt, worst, jsonschema.DefaultMaxEvaluations)
	}
	b, _ := json.Marshal(map[string]any{"schemas": compiled, "worst": worst, "at": worstAt})
	t.Logf("%s", b)
}
