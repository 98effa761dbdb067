package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bundlesFileYAML = `bundles:
  - name: notes
    description: Note taking
    globs: ["notes.*"]
  - name: gold
    label_selectors: ["tier=gold"]
`

// TestBundlesCommands: put (from flags and from a file), list, get, the
// bundle filter of tools list and tools export, conditional writes and
// delete, against a real registry service; bad input is refused before the
// gateway is called (exit 2), a refusal by the gateway is exit 1.
func TestBundlesCommands(t *testing.T) {
	addr := startRegistryGateway(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if code, _, errb := ctl(t, "tools", "register", "-f", write("tools.json", toolsListJSON), "--addr", addr); code != 0 {
		t.Fatalf("tools register: %d %s", code, errb)
	}

	steps := []struct {
		reason   string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"a bundle from a file (a bundles: list)", []string{"bundles", "put", "-f", write("bundles.yaml", bundlesFileYAML)}, 0,
			[]string{"created bundle notes (revision", "created bundle gold (revision"}, ""},
		{"a bundle from flags", []string{"bundles", "put", "deleters", "--tool", "notes.delete", "--description", "only deletes"}, 0,
			[]string{"created bundle deleters"}, ""},
		{"list shows every bundle and what it selects", []string{"bundles", "list"}, 0,
			[]string{"deleters", "1 tool(s)", "only deletes", "gold", "labels tier=gold", "notes", "glob notes.*"}, ""},
		{"get prints the bundle as JSON", []string{"bundles", "get", "notes"}, 0, []string{`"name": "notes"`, `"globs": [`, `"revision": "`}, ""},
		{"tools list --bundle lists the bundle's tools", []string{"tools", "list", "--bundle", "gold"}, 0, []string{"notes.create"}, ""},
		{"tools export --bundle exports the bundle's tools", []string{"tools", "export", "--format", "mcp", "--bundle", "deleters"}, 0, []string{`"notes.delete"`}, ""},
		{"an unknown bundle is the gateway's NotFound", []string{"tools", "list", "--bundle", "nope"}, 1, nil, "NotFound"},
		{"a stale expected revision is refused by the gateway", []string{"bundles", "put", "notes", "--glob", "*", "--expected-revision", "1"}, 1, nil, "Aborted"},
		{"an invalid glob is refused before the gateway is called", []string{"bundles", "put", "bad", "--glob", "[x"}, 2, nil, "globs[0]"},
		{"an unknown field in a file is refused", []string{"bundles", "put", "-f", write("bad.yaml", "name: x\nglob: ['*']\n")}, 2, nil, `unknown field "glob"`},
		{"a bundle that selects nothing is refused", []string{"bundles", "put", "-f", write("empty.yaml", "name: x\n")}, 2, nil, "none is given"},
		{"flags and a file together are refused", []string{"bundles", "put", "-f", write("one.yaml", "name: x\nglobs: ['*']\n"), "--glob", "*"}, 2, nil, "go with NAME"},
		{"delete", []string{"bundles", "delete", "deleters"}, 0, []string{"deleted bundle deleters"}, ""},
		{"get after delete is NotFound", []string{"bundles", "get", "deleters"}, 1, nil, "NotFound"},
		{"an unknown subcommand", []string{"bundles", "frobnicate"}, 2, nil, "unknown command"},
	}
	for _, s := range steps {
		code, out, errb := ctl(t, append(s.args, "--addr", addr)...)
		if s.args[1] == "frobnicate" {
			code, out, errb = ctl(t, s.args...)
		}
		if code != s.wantCode {
			t.Errorf("%s: %v exit %d, want %d\nstdout: %s\nstderr: %s", s.reason, s.args, code, s.wantCode, out, errb)
			continue
		}
		for _, w := range s.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", s.reason, w, out)
			}
		}
		if s.wantErr != "" && !strings.Contains(errb, s.wantErr) {
			t.Errorf("%s: stderr lacks %q:\n%s", s.reason, s.wantErr, errb)
		}
	}
	// tools list --bundle leaves the other tools out.
	_, out, _ := ctl(t, "tools", "list", "--bundle", "gold", "--json", "--addr", addr)
	var listed []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].Name != "notes.create" {
		t.Errorf("tools list --bundle gold --json = %s (%v); want only notes.create", out, err)
	}
}
