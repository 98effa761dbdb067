package mcpconformancetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcpconformancefixture"
)

// fixtureScenarios are the scenarios whose tools the fixture provides: run
// against the fixture itself, none of their checks fails, so a failure
// through the gateway is the gateway's.
var fixtureScenarios = []string{
	"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
	"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
	"json-schema-2020-12",
	// Multi round-trip (SEP-2322), on 2026-07-28 only.
	"input-required-result-basic-elicitation", "input-required-result-basic-sampling",
	"input-required-result-basic-list-roots", "input-required-result-request-state",
	"input-required-result-multiple-input-requests", "input-required-result-multi-round",
	"input-required-result-missing-input-response", "input-required-result-result-type",
	"input-required-result-unsupported-methods", "input-required-result-tampered-state",
	"input-required-result-capability-check", "input-required-result-ignore-extra-params",
	"input-required-result-validate-input", "input-required-result-non-tool-request",
	// Multi round-trip ending in a task (SEP-2663), the tasks extension's
	// (the fixture's tasksext.go).
	"tasks-mrtr-composition",
}

// fixtureChecks are single checks of scenarios the fixture does not cover
// whole (server-stateless's other checks are the gateway's face alone),
// whose tools it provides: run against the fixture, they do not fail.
var fixtureChecks = map[string][]string{
	"server-stateless": {"sep-2575-server-rejects-undeclared-capability", "sep-2575-missing-capability-http-400",
		"sep-2575-http-server-no-independent-requests-on-stream"},
}

// TestMCPConformance runs the suite (every run in runs) against the
// fixture, then against a gateway fronting it: the gateway's failures
// must be exactly those CONFORMANCE.md expects.
func TestMCPConformance(t *testing.T) {
	s := findSuite(t)
	rows, err := readExpectations()
	if err != nil {
		t.Fatal(err)
	}
	// About 30 s on an idle machine; CI runs other packages beside it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fx := mcpconformancefixture.Start(t)

	t.Run("fixture", func(t *testing.T) {
		seen := map[string]bool{}
		for _, r := range runs {
			for _, c := range s.run(t, ctx, r, fx.URL) {
				if !slices.Contains(fixtureScenarios, c.Scenario) && !slices.Contains(fixtureChecks[c.Scenario], c.ID) {
					continue
				}
				seen[c.Scenario] = true
				if c.Status == "FAILURE" {
					t.Errorf("the fixture fails %s › %s › %s: %s", r.id, c.Scenario, c.ID, c.Message)
				}
			}
		}
		for _, name := range append(slices.Collect(maps.Keys(fixtureChecks)), fixtureScenarios...) {
			if !seen[name] {
				t.Errorf("no run ran scenario %s", name)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("gateway", func(t *testing.T) {
		url := startGateway(t, ctx, fx.URL)
		results := map[string][]check{}
		for _, r := range runs {
			results[r.id] = s.run(t, ctx, r, url)
			t.Logf("run %s (%s): %s", r.id, r.about, summary(results[r.id]))
		}
		unexpected, stale := judge(rows, results)
		for _, u := range unexpected {
			t.Errorf("unexpected failure %s\n\t(a regression, or a scenario for a feature the gateway does not offer yet: then list it in CONFORMANCE.md's MCP section with its reason)", u)
		}
		for _, st := range stale {
			t.Errorf("expected failure %s", st)
		}
		// The expected failures as they happened, for whoever shrinks the list.
		for _, r := range runs {
			for _, c := range results[r.id] {
				if c.Status == "FAILURE" {
					t.Logf("expected: %s › %s › %s: %s", r.id, c.Scenario, c.ID, c.Message)
				}
			}
		}
	})
}

// summary counts a run's checks by status and names the scenarios with no
// failing check.
func summary(checks []check) string {
	n := map[string]int{}
	var scenarios []string
	failed := map[string]bool{}
	for _, c := range checks {
		n[c.Status]++
		if !slices.Contains(scenarios, c.Scenario) {
			scenarios = append(scenarios, c.Scenario)
		}
		failed[c.Scenario] = failed[c.Scenario] || c.Status == "FAILURE"
	}
	var parts []string
	for _, st := range []string{"SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"} {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], strings.ToLower(st)))
		}
	}
	passed := slices.DeleteFunc(slices.Clone(scenarios), func(s string) bool { return failed[s] })
	return fmt.Sprintf("%d scenarios, checks: %s; passed: %s", len(scenarios), strings.Join(parts, ", "), strings.Join(passed, " "))
}
