package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
)

// TestCheckConfigReach: check-config refuses a role that opens no method
// and a rule pattern matching no tool, and warns (refuses with --strict)
// on a policy under which no tool can be called.
func TestCheckConfigReach(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash := policy.HashAPIKey("fd_reach_key")
	tools := file("tools.yaml", `tools:
  - name: create_note
    backend: 127.0.0.1:1
    input_schema: {type: object, properties: {title: {type: string}}}
`)
	pol := func(name, roles, allow, rules string) string {
		return file(name, `auth:
  mode: on
  api_keys:
    - {name: agent, sha256: "`+hash+`", roles: `+roles+`}
authz:
  default: {allow: `+allow+`}
admin:
  listen_addr: ""
`+rules)
	}
	good := pol("good.yaml", "[invoker]", `["*"]`, "")
	typoRole := pol("role.yaml", "[invokr]", `["*"]`, "")
	deadRule := pol("rule.yaml", "[invoker]", `["*"]`, "rules:\n  - {name: guard, tools: [create_notes, create_*], expr: 'true'}\n")
	closed := pol("closed.yaml", "[invoker]", `["delete_*"]`, "")
	noInvoker := pol("admins.yaml", "[admin]", `["*"]`, "")
	viewer := pol("viewer.yaml", "[invoker, viewer]", `["*"]`, "")
	cases := []struct {
		name, reason string
		args         []string
		code         int
		stdout       string
		stderr       []string
	}{
		{name: "good", reason: "a role that opens InvokeTool, no rules, a callable tool: ok, no warning",
			args: []string{"--policy", good, "--tools", tools}, code: 0, stdout: "ok:"},
		{name: "unknown-role", reason: "a misspelt role grants nothing: refused, naming the key and the known roles",
			args: []string{"--policy", typoRole}, code: 1, stderr: []string{`auth.api_keys "agent" roles: role "invokr" opens no method`, "admin, invoker"}},
		{name: "viewer-role", reason: "viewer opens no gRPC method but the admin console: a known role, not a typo",
			args: []string{"--policy", viewer, "--tools", tools}, code: 0, stdout: "ok:"},
		{name: "dead-rule-pattern", reason: "a rule pattern matching no tool of the tools file is refused; the one matching is not named",
			args: []string{"--policy", deadRule, "--tools", tools}, code: 1, stderr: []string{`rule "guard": tool pattern "create_notes" matches no tool`}},
		{name: "nothing-callable", reason: "no caller may call any tool of the tools file: a warning, still exit 0",
			args: []string{"--policy", closed, "--tools", tools}, code: 0, stdout: "ok:", stderr: []string{"warning:", "no caller can call any tool"}},
		{name: "nothing-callable-strict", reason: "--strict makes the warning a problem",
			args: []string{"--policy", closed, "--tools", tools, "--strict"}, code: 1, stderr: []string{"no caller can call any tool"}},
		{name: "no-invoker-role", reason: "without a tools file: no caller holds a role InvokeTool is open to",
			args: []string{"--policy", noInvoker, "--strict"}, code: 1, stderr: []string{"holds a role InvokeTool is open to"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append([]string{"check-config"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.code, tc.reason, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout %q lacks %q (%s)", &stdout, tc.stdout, tc.reason)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q (%s)", &stderr, w, tc.reason)
				}
			}
			if tc.stderr == nil && stderr.Len() > 0 {
				t.Errorf("unexpected stderr %q (%s)", &stderr, tc.reason)
			}
			if strings.Contains(stderr.String(), `"create_*"`) {
				t.Errorf("a pattern that matches was named: %s", &stderr)
			}
		})
	}
}
