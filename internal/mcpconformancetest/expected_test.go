package mcpconformancetest

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// conformanceDoc holds the one list of expected failures, from this
// package's directory.
const conformanceDoc = "../../CONFORMANCE.md"

// The expected-failure table sits between these lines in CONFORMANCE.md.
const (
	tableStart = "<!-- mcp-expected-failures -->"
	tableEnd   = "<!-- /mcp-expected-failures -->"
)

// An expectation is one row of the table: the checks of the scenarios it
// matches (path.Match patterns) fail in each run it names, for its reason.
type expectation struct {
	scenario, check string
	runs            []string
	reason          string
	line            int // in CONFORMANCE.md
}

func (e expectation) String() string {
	return fmt.Sprintf("CONFORMANCE.md:%d (%s › %s)", e.line, e.scenario, e.check)
}

func (e expectation) matches(runID string, c check) bool {
	if !slices.Contains(e.runs, runID) {
		return false
	}
	s, _ := path.Match(e.scenario, c.Scenario)
	k, _ := path.Match(e.check, c.ID)
	return s && k
}

// readExpectations parses the table: | `scenario` | `check` | runs | reason |,
// runs comma-separated run ids.
func readExpectations() ([]expectation, error) {
	b, err := os.ReadFile(conformanceDoc)
	if err != nil {
		return nil, err
	}
	return parseExpectations(string(b))
}

func parseExpectations(doc string) ([]expectation, error) {
	lines := strings.Split(doc, "\n")
	start, end := slices.Index(lines, tableStart), slices.Index(lines, tableEnd)
	if start < 0 || end < start {
		return nil, fmt.Errorf("CONFORMANCE.md has no %s … %s block", tableStart, tableEnd)
	}
	known := func(id string) bool { return slices.ContainsFunc(runs, func(r run) bool { return r.id == id }) }
	var rows []expectation
	var errs []string
	header := 0
	for i := start + 1; i < end; i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "|") {
			continue
		}
		if header < 2 { // the header row and the |---| line
			header++
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			errs = append(errs, fmt.Sprintf("line %d: %d cells, want 4 (scenario, check, runs, reason)", i+1, len(cells)))
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		e := expectation{scenario: strings.Trim(cells[0], "`"), check: strings.Trim(cells[1], "`"), reason: cells[3], line: i + 1}
		for _, id := range strings.Split(cells[2], ",") {
			id = strings.TrimSpace(id)
			if !known(id) {
				errs = append(errs, fmt.Sprintf("line %d: unknown run %q", i+1, id))
			}
			e.runs = append(e.runs, id)
		}
		for _, p := range []string{e.scenario, e.check} {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				errs = append(errs, fmt.Sprintf("line %d: bad pattern %q", i+1, p))
			}
		}
		if e.reason == "" {
			errs = append(errs, fmt.Sprintf("line %d: no reason", i+1))
		}
		rows = append(rows, e)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("CONFORMANCE.md's expected failures: %s", strings.Join(errs, "; "))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("CONFORMANCE.md's expected-failure table has no rows")
	}
	return rows, nil
}

// judge holds each run's failures to the table: a failure no row expects
// is unexpected; a row that expects a failure in a run where none of its
// checks failed is stale (the feature landed: remove the row).
func judge(rows []expectation, results map[string][]check) (unexpected, stale []string) {
	used := map[string]bool{} // row line + run id
	for _, r := range runs {
		for _, c := range results[r.id] {
			if c.Status != "FAILURE" {
				continue
			}
			expected := false
			for _, e := range rows {
				if e.matches(r.id, c) {
					expected, used[fmt.Sprint(e.line, r.id)] = true, true
				}
			}
			if !expected {
				unexpected = append(unexpected, fmt.Sprintf("%s › %s › %s: %s", r.id, c.Scenario, c.ID, c.Message))
			}
		}
	}
	for _, e := range rows {
		for _, id := range e.runs {
			if _, ran := results[id]; ran && !used[fmt.Sprint(e.line, id)] {
				stale = append(stale, fmt.Sprintf("%s no longer fails in run %s (%s): remove it", e, id, e.reason))
			}
		}
	}
	return unexpected, stale
}
