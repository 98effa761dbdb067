package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

var updateConsoleGolden = flag.Bool("update-console-golden", false, "rewrite testdata/console/*.aria.yml from the browser's snapshots")

// consoleDir holds the pinned playwright-core (tools/console/package-lock.json).
const consoleDir = "../tools/console"

// consoleReport is what tools/console/console.mjs prints.
type consoleReport struct {
	Snapshots map[string]string               `json:"snapshots"`
	Read      map[string]any                  `json:"read"`
	Error     *struct{ Name, Message string } `json:"error"`
}

// ariaMasks mask what differs between runs in a snapshot (clock readings,
// ports, hashes, latencies, the build) and only that.
var ariaMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}Z`), "TIME"},
	{regexp.MustCompile(`127\.0\.0\.1:[0-9]+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "SHA256"},
	{regexp.MustCompile(`\b[0-9a-f]{12}\b`), "SHORTHASH"},
	{regexp.MustCompile(`version [^\n]*`), "version BUILD"},
	{regexp.MustCompile(`cell "[0-9]+\.[0-9]"`), `cell "MS"`},
	{regexp.MustCompile(` [0-9]+\.[0-9]":`), ` MS":`},
}

func maskARIA(s string) string {
	for _, m := range ariaMasks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// consoleBrowser returns Chromium and Node, and checks tools/console's
// playwright-core is installed at its pinned version: missing, the test
// skips locally and fails under CI=true (.ci/run installs them).
func consoleBrowser(t *testing.T) (chromium, node string) {
	t.Helper()
	for _, b := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(b); err == nil {
			chromium = p
			break
		}
	}
	node, _ = exec.LookPath("node")
	b, err := os.ReadFile(filepath.Join(consoleDir, "node_modules/playwright-core/package.json"))
	var manifest struct{ Version string }
	if err == nil {
		err = json.Unmarshal(b, &manifest)
	}
	var why string
	switch {
	case chromium == "":
		why = "no chromium on PATH (.ci/run installs Debian's chromium)"
	case node == "":
		why = "no node on PATH (.ci/run installs Debian's nodejs)"
	case err != nil || manifest.Version != "1.65.1":
		why = "tools/console/node_modules has no playwright-core 1.65.1: run npm ci --ignore-scripts in tools/console"
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: .ci/run installs it)", why)
		}
		t.Skip(why)
	}
	return chromium, node
}

// TestConsoleInABrowser: Debian's Chromium, driven by playwright-core
// (tools/console/console.mjs), logs in as a viewer (no approve button;
// logging out ends the session) and as an admin, filters the catalog,
// tries arguments and invokes the tool with them (the backend receives the
// call, audited as the console's), approves the held upstream change,
// filters the audit log and pastes a candidate policy on the replay page
// (its changed-decisions table); each page's ARIA snapshot (its structure,
// not its pixels)
// must equal testdata/console/NAME.aria.yml once clock readings, ports,
// hashes and latencies are masked (-update-console-golden rewrites them).
// With FLOWDROP_CONSOLE_SCREENSHOTS=DIR it also writes PNG screenshots.
func TestConsoleInABrowser(t *testing.T) {
	// Not parallel: a browser started beside the package's other tests
	// (TestStatusPageInABrowser's among them) slows them on a small machine.
	chromium, node := consoleBrowser(t)
	env, audit := consoleEnv(t)
	// A denial and a call, so the audit log has lines to filter out; the
	// call's stringified tags are a repair the analytics page shows.
	env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "run_command", Arguments: gatewaytest.Args(t, map[string]any{"command": "ls && rm -rf /"})})
	env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "x", "tags": `["a"]`})})

	// The replay page replays them; they must be on the file by then.
	awaitAudit(t, audit, `"tool":"create_note","decision":"allow"`)
	replayPolicy, err := filepath.Abs(filepath.Join("testdata", "replay", "policy.candidate.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// A browser starting on a loaded machine needs more than testCtx's bound.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "console.mjs")
	cmd.Dir = consoleDir
	cmd.Env = append(os.Environ(), "FLOWDROP_CONSOLE_URL="+env.AdminURL, "FLOWDROP_CONSOLE_ADMIN_KEY="+keyOperator,
		"FLOWDROP_CONSOLE_VIEWER_KEY="+keyViewer, "CHROMIUM="+chromium, "FLOWDROP_CONSOLE_REPLAY_POLICY="+replayPolicy)
	if dir := os.Getenv("FLOWDROP_CONSOLE_SCREENSHOTS"); dir != "" {
		abs, _ := filepath.Abs(dir)
		cmd.Env = append(cmd.Env, "FLOWDROP_CONSOLE_SCREENSHOTS="+abs)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) {
		t.Fatalf("console.mjs: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var r consoleReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("console.mjs printed %q: %v\nstderr: %s", out, err, stderr.String())
	}
	if r.Error != nil {
		t.Fatalf("the browser session failed: %s: %s\nsnapshots so far: %v", r.Error.Name, r.Error.Message, r.Snapshots)
	}
	for _, c := range []struct {
		key, reason string
		want        any
	}{
		{"viewerApproveButtons", "the viewer is read-only", float64(0)},
		{"afterLogout", "logging out returns to the login page", "/console/login"},
		{"verdict", "the arguments are repaired, then valid", "valid: the backend would receive the arguments below"},
		{"outcome", "Invoke called the tool as the operator", "the tool answered"},
		{"replaySummary", "the candidate drops the chaining rule (the denial is allowed now); it has no key named operator, so the Invoke is not replayable",
			"4 line(s) read, 3 tool call(s); 2 replayed: 1 unchanged (0 refused for another reason), 0 allowed → refused (0 by a changed schema), 1 refused → allowed."},
		{"notice", "the approval is confirmed", "approved the change of weather.forecast"},
	} {
		if got := r.Read[c.key]; got != c.want {
			t.Errorf("%s = %v, want %v (%s)", c.key, got, c.want, c.reason)
		}
	}
	if e, _ := env.Registry.Lookup(pendingTool); e.Tool.Pending != nil {
		t.Error("the approval clicked in the browser did not apply the change")
	}
	if calls := env.Backend.CallsFor("create_note"); len(calls) != 2 || calls[1].Request.GetArguments().GetFields()["title"].GetStringValue() != "Tom & Jerry" {
		t.Errorf("the backend received %d create_note calls, want the gRPC one and the Invoke clicked, with the repaired title", len(calls))
	}
	awaitAudit(t, audit, `"caller_subject":"operator","caller_method":"api-key","caller_roles":["admin","invoker"],"client":"console","tool":"create_note","decision":"allow"`)
	names := []string{"login", "viewer-pending", "overview", "catalog-filtered", "try-result", "invoke-result", "repairs-tool", "pending", "approved", "audit-filtered", "replay-changes"}
	for _, name := range names {
		got, ok := r.Snapshots[name]
		if !ok {
			t.Errorf("no snapshot %s", name)
			continue
		}
		got = maskARIA(got) + "\n"
		path := filepath.Join("testdata", "console", name+".aria.yml")
		if *updateConsoleGolden {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-console-golden to write it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("the %s page's structure changed (-%s +browser):\n%s", name, path, diff)
		}
	}
	for _, never := range []string{keyOperator, keyViewer, pendingSecretQ} {
		for name, s := range r.Snapshots {
			if strings.Contains(s, never) {
				t.Errorf("the %s page shows %q", name, never)
			}
		}
	}
}
