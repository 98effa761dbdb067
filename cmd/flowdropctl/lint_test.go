package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateLint = flag.Bool("update-lint", false, "rewrite testdata/lint/*.golden")

// TestToolsLintGolden runs the command on each testdata/lint file and
// compares stdout with <file>.<profiles>.golden. Run with -update-lint to
// rewrite the golden files.
func TestToolsLintGolden(t *testing.T) {
	rows := []struct {
		reason   string
		file     string
		profiles []string
		wantCode int
	}{
		{"array without items fails OpenAI and Gemini, warns for Anthropic", "python_list.yaml", nil, 1},
		{"tools: list paths point into the list; the dotted name fails OpenAI", "declarative.yaml", []string{"--profile", "openai"}, 1},
		{"the same list for Gemini: $schema, additionalProperties, a type list — what the Gemini export rewrites: warnings, exit 0", "declarative.yaml", []string{"--profile", "gemini"}, 0},
		{"a schema OpenAI accepts exits 0", "clean_openai.json", []string{"--profile", "openai"}, 0},
		{"warnings alone exit 0", "mcp_tool.json", []string{"--profile", "openai"}, 0},
		{"MCP inputSchema with top-level anyOf fails Anthropic", "mcp_tool.json", []string{"--profile=anthropic,openai-strict"}, 1},
	}
	for _, r := range rows {
		name := r.file + "." + strings.NewReplacer("--profile=", "", "--profile", "", ",", "+").Replace(strings.Join(r.profiles, ""))
		if len(r.profiles) == 0 {
			name = r.file + ".all"
		}
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"-f", filepath.Join("testdata", "lint", r.file)}, r.profiles...)
			code := runToolsLint(args, strings.NewReader(""), &stdout, &stderr)
			if code != r.wantCode {
				t.Fatalf("reason: %s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.reason, code, r.wantCode, stdout.String(), stderr.String())
			}
			golden := filepath.Join("testdata", "lint", name+".golden")
			if *updateLint {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update-lint to create it)", err)
			}
			if stdout.String() != string(want) {
				t.Errorf("reason: %s\nstdout differs from %s\n--- got\n%s--- want\n%s", r.reason, golden, stdout.String(), want)
			}
		})
	}
}

func TestToolsLintStdin(t *testing.T) {
	src := `{"name":"t","input_schema":{"type":"object","properties":{"xs":{"type":"array"}}}}`
	var stdout, stderr bytes.Buffer
	code := runToolsLint([]string{"-f", "-", "--profile", "openai"}, strings.NewReader(src), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	want := "openai error /input_schema/properties/xs array-items-required: "
	if !strings.HasPrefix(stdout.String(), want) {
		t.Fatalf("stdout %q, want prefix %q", stdout.String(), want)
	}
}

func TestToolsLintBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := []struct {
		reason  string
		args    []string
		wantErr string // a fragment of the one-line error
	}{
		{"no -f", []string{}, "-f FILE is required"},
		{"unknown profile is named", []string{"-f", write("a.json", `{"name":"a","input_schema":{"type":"object"}}`), "--profile", "mistral"}, `unknown profile "mistral"`},
		{"missing file names the path", []string{"-f", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"unparsable YAML", []string{"-f", write("b.yaml", "name: [unclosed\n")}, "b.yaml"},
		{"empty file", []string{"-f", write("c.yaml", "\n")}, "the file is empty"},
		{"tool without a name", []string{"-f", write("d.json", `{"input_schema":{"type":"object"}}`)}, "name is missing"},
		{"tool without a schema", []string{"-f", write("e.json", `{"name":"e"}`)}, "input_schema is missing"},
		{"schema that is not an object", []string{"-f", write("f.json", `{"name":"f","input_schema":"object"}`)}, `("f"): input_schema must be an object, got a string`},
		{"a top-level list is neither form", []string{"-f", write("i.json", `[1,2]`)}, "got a list"},
		{"tools: that is not a list", []string{"-f", write("j.yaml", "tools: {name: a}\n")}, "tools: must be a list, got an object"},
		{"both forms at once", []string{"-f", write("k.yaml", "name: a\ntools: []\n")}, `both a tools: list and a top-level "name"`},
		{"both schema spellings", []string{"-f", write("l.json", `{"name":"l","input_schema":{},"inputSchema":{}}`)}, "both input_schema and inputSchema"},
		{"a bad tool in a list is located", []string{"-f", write("g.yaml", "tools:\n  - name: ok\n    input_schema: {type: object}\n  - input_schema: {type: object}\n")}, "/tools/1: name is missing"},
		{"empty tools list", []string{"-f", write("h.yaml", "tools: []\n")}, "tools: is empty"},
		{"stray positional argument", []string{"tool.yaml"}, `unexpected argument "tool.yaml"`},
	}
	for _, r := range rows {
		t.Run(r.reason, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runToolsLint(r.args, strings.NewReader(""), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("reason: %s\nexit %d, want 2; stderr %s", r.reason, code, stderr.String())
			}
			if !strings.Contains(stderr.String(), r.wantErr) {
				t.Fatalf("reason: %s\nstderr %q does not mention %q", r.reason, stderr.String(), r.wantErr)
			}
			if stdout.Len() != 0 {
				t.Fatalf("bad input printed findings: %s", stdout.String())
			}
		})
	}
}
