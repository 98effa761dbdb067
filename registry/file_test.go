package registry_test

import (
	"context"
	"path/filepath"
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
