package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsAlias: `tools alias` registers an alias whose default schema is
// the target's less what it sets and whose default description is the
// target's; the gateway refuses a widening schema, naming pointer and
// keyword, and the command exits 1.
func TestToolsAlias(t *testing.T) {
	addr := startRegistryGateway(t)
	dir := t.TempDir()
	toolFile := filepath.Join(dir, "tool.yaml")
	wide := filepath.Join(dir, "wide.json")
	if err := os.WriteFile(toolFile, []byte(toolYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wide, []byte(`{"type":"object","properties":{"title":{"type":["string","integer"]}},"required":["title"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, reason string
		args         []string
		wantCode     int
		wantOut      []string
		wantErr      []string
		notOut       []string
	}{
		{name: "target", reason: "the target", args: []string{"register", "-f", toolFile}, wantOut: []string{"created create_board"}},
		{name: "alias", reason: "injecting a property the target does not declare is refused, naming it",
			args:     []string{"alias", "quick_board", "--target", "create_board", "--fixed", `tags=["quick"]`, "--inject", "owner=subject"},
			wantCode: 1, wantErr: []string{"/properties/owner", "wider"}},
		{name: "alias-ok", reason: "the same without injecting owner, a property the target does not declare (refused above)",
			args:    []string{"alias", "quick_board", "--target", "create_board", "--fixed", `tags=["quick"]`},
			wantOut: []string{"created quick_board", "an alias of create_board"}},
		{name: "get", reason: "the stored alias: no tags in its schema, the target's description, the spec",
			args:    []string{"get", "quick_board"},
			wantOut: []string{`"description": "Create a board."`, `"alias": {`, `"target": "create_board"`, `"quick"`}, notOut: []string{`"items"`}},
		{name: "wide", reason: "a schema wider than the target's is refused naming pointer and keyword",
			args: []string{"alias", "wide_board", "--target", "create_board", "--schema", wide}, wantCode: 1,
			wantErr: []string{"/properties/title", `"type"`, "wider"}},
		{name: "no-target", reason: "--target is required", args: []string{"alias", "x"}, wantCode: 2, wantErr: []string{"--target TOOL is required"}},
	}
	for _, st := range steps {
		args := append([]string{"tools", st.args[0], "--addr", addr, "--timeout", "10s"}, st.args[1:]...)
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != st.wantCode {
			t.Fatalf("%s: exit %d, want %d (%s)\nstdout: %s\nstderr: %s", st.name, code, st.wantCode, st.reason, &stdout, &stderr)
		}
		inOrder(t, st.name+" stdout", stdout.String(), st.wantOut, st.reason)
		inOrder(t, st.name+" stderr", stderr.String(), st.wantErr, st.reason)
		for _, s := range st.notOut {
			if strings.Contains(stdout.String(), s) {
				t.Errorf("%s: stdout has %q (%s)", st.name, s, st.reason)
			}
		}
	}
}
