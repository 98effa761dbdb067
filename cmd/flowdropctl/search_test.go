package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// TestToolsSearch: `tools search QUERY` prints the gateway's ranking (best
// first) as a table, or as {"hits": [...]} with --output json; bad usage
// is refused before dialling, a refused query is the gateway's error.
func TestToolsSearch(t *testing.T) {
	env := gatewaytest.Start(t)
	for _, tc := range []struct {
		reason   string
		args     []string
		wantCode int
		check    func(t *testing.T, stdout, stderr string)
	}{
		{reason: "a table, the best match first", args: []string{"note with tags"},
			check: func(t *testing.T, stdout, _ string) {
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				if len(lines) < 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "create_note ") ||
					!strings.Contains(lines[1], "Create a note with a title, optional tags and a body.") {
					t.Errorf("stdout:\n%s", stdout)
				}
			}},
		{reason: "--output json and --limit", args: []string{"settings", "--limit", "1", "--output", "json"},
			check: func(t *testing.T, stdout, _ string) {
				var doc struct {
					Hits []struct {
						Name  string
						Score float64
					}
				}
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Hits) != 1 || doc.Hits[0].Name != "update_settings" || doc.Hits[0].Score <= 0 {
					t.Errorf("stdout %s (%v)", stdout, err)
				}
			}},
		{reason: "no match: an empty table is said on stderr", args: []string{"zeppelin"},
			check: func(t *testing.T, stdout, stderr string) {
				if stdout != "" || !strings.Contains(stderr, "no tool matches") {
					t.Errorf("stdout %q stderr %q", stdout, stderr)
				}
			}},
		{reason: "no query is bad usage", args: []string{}, wantCode: 2},
		{reason: "a limit out of range is bad usage", args: []string{"note", "--limit", "0"}, wantCode: 2},
		{reason: "the gateway refuses a query over its bound", args: []string{strings.Repeat("q", 1025)}, wantCode: 1,
			check: func(t *testing.T, _, stderr string) {
				if !strings.Contains(stderr, "InvalidArgument") && !strings.Contains(stderr, "query") {
					t.Errorf("stderr %q", stderr)
				}
			}},
	} {
		code, stdout, stderr := ctl(t, append([]string{"tools", "search", "--addr", env.Addr}, tc.args...)...)
		if code != tc.wantCode {
			t.Errorf("%s: exit %d, want %d\nstdout %s\nstderr %s", tc.reason, code, tc.wantCode, stdout, stderr)
			continue
		}
		if tc.check != nil {
			tc.check(t, stdout, stderr)
		}
	}
}
