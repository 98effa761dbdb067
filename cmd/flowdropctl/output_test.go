package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// TestOutputJSON: with --output json every command prints exactly one JSON
// document on stdout — its result, or {"error": {"code", ...}} with exit 1
// when the call failed — and `tools watch` prints JSON lines; exit codes
// are 0 ok, 1 call failed, 2 usage.
func TestOutputJSON(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(authPolicy("")))
	dir := t.TempDir()
	toolFile := writeFile(t, dir, "tool.yaml", `name: json_out_tool
description: A tool registered by the --output json test.
backend: `+env.BackendAddr+`
input_schema: {type: object, properties: {title: {type: string}}}
`)
	// A schema no provider format takes as it is (an array without items):
	// lint's errors, where the file above has only warnings the export
	// rewrites repair.
	lintFile := writeFile(t, dir, "lint.yaml", `name: json_lint_tool
description: A tool whose schema the provider formats refuse.
backend: `+env.BackendAddr+`
input_schema: {type: object, properties: {tags: {type: array}}}
`)
	schema := writeFile(t, dir, "schema.json", `{"type":"object","properties":{"tags":{"type":"array"}}}`)
	for _, tc := range []struct {
		reason   string
		args     []string
		stdin    string
		key      string // the API key to send (env)
		wantCode int
		want     []string // substrings of the one JSON document
		lines    int      // >0: JSON lines, this many
	}{
		{reason: "invoke: the response", args: []string{"invoke", "create_note", "--args", `{"title":"A &amp; B"}`}, key: keyInvoker, want: []string{`"result"`, `"repairs"`}},
		{reason: "invoke of an unknown tool: the error, exit 1", args: []string{"invoke", "nope_tool"}, key: keyInvoker, wantCode: 1, want: []string{`"code": "NotFound"`}},
		{reason: "register", args: []string{"tools", "register", "-f", toolFile}, key: keyAdmin, want: []string{`"registered"`, `"json_out_tool"`}},
		{reason: "list", args: []string{"tools", "list"}, key: keyInvoker, want: []string{`"name": "create_note"`}},
		{reason: "get", args: []string{"tools", "get", "create_note"}, key: keyInvoker, want: []string{`"name": "create_note"`}},
		{reason: "get of a missing tool", args: []string{"tools", "get", "nope_tool"}, key: keyInvoker, wantCode: 1, want: []string{`"code": "NotFound"`}},
		{reason: "delete", args: []string{"tools", "delete", "json_out_tool"}, key: keyAdmin, want: []string{`"deleted": "json_out_tool"`}},
		{reason: "watch: JSON lines", args: []string{"tools", "watch", "--count", "2"}, key: keyInvoker, lines: 2},
		{reason: "health", args: []string{"health"}, want: []string{`"status": "SERVING"`}},
		{reason: "hash-key", args: []string{"hash-key"}, stdin: "k\n", want: []string{`"sha256": "sha256:`}},
		{reason: "lint: errors are exit 1, still one document", args: []string{"tools", "lint", "-f", lintFile}, wantCode: 1, want: []string{`"findings"`, `"array-items-required"`}},
		{reason: "lint: warnings alone are exit 0", args: []string{"tools", "lint", "-f", toolFile}, want: []string{`"findings"`, `"strict-required"`, `"errors": 0`}},
		{reason: "normalize: arguments and the report", args: []string{"normalize", "--schema", schema}, stdin: `{"tags":"[\"a\"]"}`, want: []string{`"arguments"`, `"json-decoded"`}},
		{reason: "a bad --output value is usage", args: []string{"health", "--output", "yaml"}, wantCode: 2},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Setenv(envAPIKey, tc.key)
			args := append(append([]string{}, tc.args...), "--output", "json")
			if tc.wantCode == 2 {
				args = tc.args
			}
			if needsAddr(tc.args) {
				args = append(args, "--addr", env.Addr)
			}
			var out, errb bytes.Buffer
			code := run(args, strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, &out, &errb)
			}
			if tc.wantCode == 2 {
				return
			}
			if tc.lines > 0 {
				ls := strings.Split(strings.TrimSpace(out.String()), "\n")
				for _, l := range ls {
					if !json.Valid([]byte(l)) {
						t.Errorf("line %q is not JSON", l)
					}
				}
				if len(ls) != tc.lines {
					t.Errorf("%d lines, want %d", len(ls), tc.lines)
				}
				return
			}
			dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
			var doc any
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, &out)
			}
			if dec.More() {
				t.Errorf("stdout holds more than one JSON document:\n%s", &out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %s:\n%s", w, &out)
				}
			}
		})
	}
}

// needsAddr: the commands that call the gateway take --addr.
func needsAddr(args []string) bool {
	switch args[0] {
	case "invoke", "health":
		return true
	case "tools":
		return args[1] != "lint"
	}
	return false
}

// TestCompletion: the scripts are valid shell and complete the commands.
func TestCompletion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"completion", "bash"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, &errb)
	}
	script := filepath.Join(t.TempDir(), "c.bash")
	os.WriteFile(script, out.Bytes(), 0o600)
	check := `source ` + script + `; COMP_WORDS=(flowdropctl to); COMP_CWORD=1; _flowdropctl; echo "${COMPREPLY[@]}";` +
		` COMP_WORDS=(flowdropctl tools li); COMP_CWORD=2; _flowdropctl; echo "${COMPREPLY[@]}";` +
		` COMP_WORDS=(flowdropctl invoke --output ""); COMP_CWORD=3; _flowdropctl; echo "${COMPREPLY[@]}"`
	got, err := exec.Command("bash", "-c", check).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, got)
	}
	if want := "tools\nlist lint\ntext json\n"; string(got) != want {
		t.Errorf("completions %q, want %q", got, want)
	}
	// Every group's every subcommand completes, and its usage names it:
	// the table that dispatches is the one completed and documented.
	for _, c := range commands {
		g := c.group
		if g == nil {
			continue
		}
		for _, sub := range g.names() {
			check := `source ` + script + `; COMP_WORDS=(flowdropctl ` + g.name + ` ` + sub + `); COMP_CWORD=2; _flowdropctl; echo "${COMPREPLY[@]}"`
			got, err := exec.Command("bash", "-c", check).CombinedOutput()
			if err != nil || !slices.Contains(strings.Fields(string(got)), sub) {
				t.Errorf("completing %q %q: %q (%v)", g.name, sub, got, err)
			}
			if !strings.Contains(g.usage, "\n  "+sub+" ") && !strings.Contains(g.usage, "\n  "+sub+"\n") {
				t.Errorf("%s's usage does not list %q", g.name, sub)
			}
		}
	}
	if code := run([]string{"completion", "fish"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("completion fish: exit %d, want 2", code)
	}
}
