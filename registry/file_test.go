package registry_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

func TestLoadFile(t *testing.T) {
	tools, err := registry.LoadFile(filepath.Join("testdata", "tools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name != "create_board" || tools[1].Name != "search.docs" {
		t.Fatalf("tools %+v", tools)
	}
	cb := tools[0]
	if cb.Timeout != 5*time.Second || cb.Labels["team"] != "boards" || cb.Backend != "127.0.0.1:7001" || cb.Description == "" {
		t.Fatalf("create_board decoded as %+v", cb)
	}
	if got := cb.InputSchema.Fields["required"].GetListValue().GetValues()[0].GetStringValue(); got != "title" {
		t.Fatalf("schema not carried: required[0] = %q", got)
	}
	// The draft-07 tool validates with its own draft.
	e, err := registry.Compile(tools[1])
	if err != nil {
		t.Fatal(err)
	}
	if ve := e.Validate(args(t, `{"limit":51}`), nil); ve == nil {
		t.Fatal("maximum not enforced")
	}

	js, err := registry.LoadFile(filepath.Join("testdata", "tools.json"))
	if err != nil || len(js) != 1 || js[0].Name != "echo" {
		t.Fatalf("JSON file: %v %+v", err, js)
	}
}

func TestLoadFileErrors(t *testing.T) {
	cases := []struct {
		reason string
		file   string
		want   []string // substrings, all required
	}{
		{"duplicate tool name", "bad_duplicate.yaml", []string{"bad_duplicate.yaml", "tools[1]", `duplicate tool name "dup"`, "tools[0]"}},
		{"unresolvable $ref names the tool", "bad_schema.yaml", []string{"bad_schema.yaml", `"broken"`, `unresolvable $ref "#/$defs/missing"`}},
		{"bad backend address", "bad_backend.yaml", []string{"bad_backend.yaml", `"nowhere"`, "backend", "host:port"}},
		{"unknown field (strict decoding)", "bad_field.yaml", []string{"bad_field.yaml", "tools[0]", `unknown field "inputSchema"`}},
		{"bad timeout", "bad_timeout.yaml", []string{"bad_timeout.yaml", `"slow"`, `timeout "5 seconds"`}},
		{"root not an object schema", "bad_root.json", []string{"bad_root.json", `"list"`, `root type must be "object"`}},
		{"bad name", "bad_name.yaml", []string{"bad_name.yaml", `"has space"`, "must match"}},
		{"a gRPC method is imported, not declared", "bad_spec_grpc.yaml", []string{"bad_spec_grpc.yaml", `"notes.create"`, "spec.grpc_method", "import grpc"}},
		{"unknown request part", "bad_spec_in.yaml", []string{"bad_spec_in.yaml", `"pets.get"`, "spec.http_operation.parameters[0].in", `"cookie"`}},
		{"backend and spec both set", "bad_spec_both.yaml", []string{"bad_spec_both.yaml", `"twice"`, "exactly one of backend and spec"}},
		{"unknown spec field (strict decoding, the value not echoed)", "bad_spec_field.yaml", []string{"bad_spec_field.yaml", "tools[0]", `unknown field "token"`}},
		{"the kind's own checks", "bad_spec_url.yaml", []string{"bad_spec_url.yaml", `"weather.forecast"`, "spec.mcp_tool.url"}},
		{"missing file", "no_such_file.yaml", []string{"no_such_file.yaml"}},
	}
	for _, c := range cases {
		_, err := registry.LoadFile(filepath.Join("testdata", c.file))
		if err == nil {
			t.Errorf("%s: loaded without error", c.reason)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.reason, err, w)
			}
		}
	}
}

// TestLoadFileSpecs: a tools file declares tools of every kind but a gRPC
// method (imported: its descriptors are binary), as the gRPC API's spec.
func TestLoadFileSpecs(t *testing.T) {
	tools, err := registry.LoadFile(filepath.Join("testdata", "tools_specs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 {
		t.Fatalf("%d tools, want 2", len(tools))
	}
	mcpSpec := tools[0].Spec
	wantMCP := registry.MCPTool{URL: "https://weather.internal/mcp", Tool: "forecast", CredentialFile: "/etc/flowdrop/weather.token"}
	if mcpSpec == nil || mcpSpec.MCPTool == nil || *mcpSpec.MCPTool != wantMCP || tools[0].Backend != "" {
		t.Errorf("weather.forecast's spec %+v; want mcp_tool %+v", mcpSpec, wantMCP)
	}
	if wantTLS := (registry.TransportSecurity{Require: true, ServerName: "weather.internal"}); mcpSpec == nil || mcpSpec.TLS == nil || *mcpSpec.TLS != wantTLS {
		t.Errorf("weather.forecast's spec.tls %+v; want %+v", mcpSpec, wantTLS)
	}
	op := httpOperation(tools[1])
	wantParams := []registry.HTTPParameter{{Name: "petId", In: registry.HTTPInPath}, {Name: "verbose", In: registry.HTTPInQuery}}
	if op == nil || op.BaseURL != "https://pets.internal/v1" || op.Method != "GET" || op.Path != "/pets/{petId}" ||
		!slices.Equal(op.Parameters, wantParams) || op.ResponseSchema.GetFields()["type"].GetStringValue() != "object" {
		t.Errorf("pets.get's http_operation %+v; want the file's", op)
	}
	for _, tl := range tools {
		if _, err := registry.Compile(tl); err != nil {
			t.Errorf("%s does not compile: %v", tl.Name, err)
		}
	}
}

// TestLoadFileNeverEchoesAValue: strict decoding names a misplaced field,
// never its value (which may be a credential put in the wrong place).
func TestLoadFileNeverEchoesAValue(t *testing.T) {
	_, err := registry.LoadFile(filepath.Join("testdata", "bad_spec_field.yaml"))
	if err == nil || strings.Contains(err.Error(), "sk-live-secret") {
		t.Fatalf("error %v: want one that does not quote the value", err)
	}
}

func TestParseToolsDuplicateYAMLKey(t *testing.T) {
	_, err := registry.ParseTools([]byte("tools:\n  - name: a\n    name: b\n    backend: 127.0.0.1:1\n"), "inline")
	if err == nil || !strings.Contains(err.Error(), "inline") {
		t.Fatalf("duplicate key accepted or error unnamed: %v", err)
	}
}

func TestSeed(t *testing.T) {
	ctx := context.Background()
	tools, err := registry.LoadFile(filepath.Join("testdata", "tools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	defer s.Close()
	if err := registry.Seed(ctx, s, tools); err != nil {
		t.Fatal(err)
	}
	rev := s.Revision()
	// Re-seeding the same definitions (a restart) writes nothing.
	if err := registry.Seed(ctx, s, tools); err != nil {
		t.Fatal(err)
	}
	if s.Revision() != rev {
		t.Fatalf("unchanged seed bumped the store revision %d -> %d", rev, s.Revision())
	}
	// A changed definition overwrites the stored one.
	changed := append([]registry.Tool(nil), tools...)
	changed[0].Description = "new text"
	if err := registry.Seed(ctx, s, changed); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "create_board")
	if got.Description != "new text" || s.Revision() != rev+1 {
		t.Fatalf("changed seed: %q at store revision %d", got.Description, s.Revision())
	}
	// A bad tool is refused before anything is written.
	bad := registry.Tool{Name: "x", Backend: "nope"}
	if err := registry.Seed(ctx, s, []registry.Tool{bad}); err == nil {
		t.Fatal("bad tool seeded")
	}
}

func httpOperation(t registry.Tool) *registry.HTTPOperation {
	if t.Spec == nil {
		return nil
	}
	return t.Spec.HTTPOperation
}
