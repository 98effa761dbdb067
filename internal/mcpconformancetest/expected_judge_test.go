package mcpconformancetest

import (
	"slices"
	"strings"
	"testing"
)

// TestJudge: the rules the conformance run is held to, without Node.
func TestJudge(t *testing.T) {
	doc := strings.Join([]string{
		"intro",
		tableStart,
		"| scenario | check | runs | reason |",
		"|---|---|---|---|",
		"| `tools-call-image` | `tools-call-image` | 0.1.16, 2026-07-28 | content is dropped |",
		"| `tasks-*` | `*` | 2026-07-28 | tasks are not offered |",
		tableEnd,
	}, "\n")
	rows, err := parseExpectations(doc)
	if err != nil {
		t.Fatal(err)
	}
	fail := func(scenario, id string) check {
		return check{Scenario: scenario, ID: id, Status: "FAILURE", Message: "m"}
	}
	pass := func(scenario, id string) check { return check{Scenario: scenario, ID: id, Status: "SUCCESS"} }
	for _, tc := range []struct {
		reason            string
		results           map[string][]check
		unexpected, stale []string // prefixes
	}{
		{reason: "every listed failure happens, nothing else fails",
			results: map[string][]check{
				"0.1.16":     {fail("tools-call-image", "tools-call-image"), pass("tools-list", "tools-list")},
				"2026-07-28": {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a"), fail("tasks-wire-fields", "b")}}},
		{reason: "a failure no row lists is unexpected",
			results: map[string][]check{
				"0.1.16":     {fail("tools-call-image", "tools-call-image"), fail("tools-list", "tools-list")},
				"2026-07-28": {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a")}},
			unexpected: []string{"0.1.16 › tools-list › tools-list"}},
		{reason: "a row applies only to the runs it names",
			results: map[string][]check{
				"0.1.16":     {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a")},
				"2026-07-28": {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a")}},
			unexpected: []string{"0.1.16 › tasks-lifecycle › a"}},
		{reason: "a listed failure that stopped happening in one of its runs is stale",
			results: map[string][]check{
				"0.1.16":     {pass("tools-call-image", "tools-call-image")},
				"2026-07-28": {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a")}},
			stale: []string{"CONFORMANCE.md:5 (tools-call-image › tools-call-image) no longer fails in run 0.1.16"}},
		{reason: "warnings and skipped checks are not failures",
			results: map[string][]check{
				"0.1.16":     {fail("tools-call-image", "tools-call-image"), {Scenario: "server-sse-polling", ID: "x", Status: "WARNING"}},
				"2026-07-28": {fail("tools-call-image", "tools-call-image"), fail("tasks-lifecycle", "a"), {Scenario: "caching", ID: "y", Status: "SKIPPED"}}}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			unexpected, stale := judge(rows, tc.results)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"unexpected", unexpected, tc.unexpected}, {"stale", stale, tc.stale}} {
				if len(c.got) != len(c.want) || !slices.EqualFunc(c.got, c.want, strings.HasPrefix) {
					t.Errorf("%s: got %q, want entries starting %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestParseExpectationsRefuses: a malformed table fails the run rather
// than expecting nothing (or everything).
func TestParseExpectationsRefuses(t *testing.T) {
	table := func(rows ...string) string {
		return strings.Join(append([]string{tableStart, "| scenario | check | runs | reason |", "|---|---|---|---|"}, append(rows, tableEnd)...), "\n")
	}
	for _, tc := range []struct {
		reason, doc, want string
	}{
		{"no table", "nothing here", "no <!-- mcp-expected-failures -->"},
		{"an empty table", table(), "has no rows"},
		{"a run the test does not make", table("| `a` | `*` | 0.1.15 | r |"), `unknown run "0.1.15"`},
		{"a row without a reason", table("| `a` | `*` | 0.1.16 |  |"), "no reason"},
		{"a row with a cell too few", table("| `a` | 0.1.16 | r |"), "3 cells, want 4"},
		{"a pattern path.Match rejects", table("| `a[` | `*` | 0.1.16 | r |"), `bad pattern "a["`},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := parseExpectations(tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
