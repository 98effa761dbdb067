package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigReplay: check-config --replay's exit codes and formats,
// over the audit the real gateway wrote (server/testdata/replay).
func TestCheckConfigReplay(t *testing.T) {
	dir := filepath.Join("..", "..", "server", "testdata", "replay")
	pol, tools, audit := filepath.Join(dir, "policy.candidate.yaml"), filepath.Join(dir, "tools.candidate.yaml"), filepath.Join(dir, "audit.jsonl")
	cases := []struct {
		name, reason string
		args         []string
		code         int
		want         string // in stdout (codes 0 and 3) or stderr
	}{
		{name: "text", reason: "decisions change: exit 3, the text report on stdout",
			args: []string{"--policy", pol, "--tools", tools, "--replay", audit}, code: 3, want: `allowed-to-refused: was allow, now deny (rule-denied, rule "no-sudo")`},
		{name: "json", reason: "--format json writes the report as JSON",
			args: []string{"--policy", pol, "--tools", tools, "--replay", audit, "--format", "json"}, code: 3, want: `"kind": "schema-refused"`},
		{name: "needs-both-files", reason: "a replay needs the candidate policy and tool set",
			args: []string{"--policy", pol, "--replay", audit}, code: 2, want: "--replay needs both"},
		{name: "bad-format", reason: "only text and json",
			args: []string{"--policy", pol, "--tools", tools, "--replay", audit, "--format", "xml"}, code: 2, want: "want text or json"},
		{name: "missing-audit", reason: "an audit that cannot be opened is a problem",
			args: []string{"--policy", pol, "--tools", tools, "--replay", filepath.Join(dir, "nope.jsonl")}, code: 1, want: "nope.jsonl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append([]string{"check-config"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.code, tc.reason, &stdout, &stderr)
			}
			out := stderr.String()
			if tc.code == 0 || tc.code == 3 {
				out = stdout.String()
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output %q lacks %q (%s)", out, tc.want, tc.reason)
			}
			if tc.name == "json" && !json.Valid(stdout.Bytes()) {
				t.Errorf("--format json wrote invalid JSON: %s", &stdout)
			}
		})
	}
}
