package deploy_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// TestAlertRulesPassPromtool: the rules check, and their unit tests pass,
// with promtool (Debian's prometheus package; .ci/run installs it, so CI
// never skips).
func TestAlertRulesPassPromtool(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing; .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", "prometheus/alerts.yaml"}, {"test", "rules", "prometheus/alerts_test.yaml"}} {
		if out, err := exec.Command("promtool", args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricName finds metric names in PromQL: identifiers starting flowdrop_
// or grpc_server_ (label names and functions never do).
var metricName = regexp.MustCompile(`\b(flowdrop_[a-z_]+|grpc_server_[a-z_]+)`)

// TestDashboardAndRulesUseExportedMetrics: every metric the alert rules and
// the Grafana dashboard query is one a running gateway exports (after a
// call, so the per-call series exist), histograms by their _bucket/_count/
// _sum series.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	p := server.DemoPolicy()
	p.Rules = []policy.Rule{{Name: "no-forbidden", Tools: []string{"create_note"}, Expr: `!args.title.contains("forbidden")`}}
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"files": {Path: "/bin/true"}} // its series exist from start
	env := gatewaytest.Start(t, gatewaytest.WithAdmin(), gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))
	// A served call with a repair, a rule denial, a validation failure: the
	// per-call series exist only once something was counted.
	for _, a := range []map[string]any{{"title": "A &amp; B"}, {"title": "forbidden"}, {"title": 7}} {
		env.Client.InvokeTool(t.Context(), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, a)})
	}
	// And an MCP request (flowdrop_mcp_requests_total).
	mreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, env.MCPURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	mreq.Header.Set("Content-Type", "application/json")
	mreq.Header.Set("Accept", "application/json, text/event-stream")
	mreq.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	mresp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	mresp.Body.Close()
	if mresp.StatusCode != http.StatusOK {
		t.Fatalf("MCP tools/list: status %d", mresp.StatusCode)
	}
	resp, err := http.Get(env.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for name, f := range fams {
		exported[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				exported[name+s] = true
			}
		}
	}
	var exprs []string
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	ruleExprs := len(exprs)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err = os.ReadFile("grafana/flowdrop-gateway.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("dashboard has no panels")
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			if !exported[m] {
				t.Errorf("%q queries %s, which the gateway does not export", e, m)
			}
		}
	}
	// Both faces are watched: the MCP face's requests are on the dashboard
	// and under an alert, as InvokeTool's are.
	for what, list := range map[string][]string{"alert rules": exprs[:ruleExprs], "dashboard": exprs[ruleExprs:]} {
		if !slices.ContainsFunc(list, func(e string) bool { return strings.Contains(e, "flowdrop_mcp_requests_total") }) {
			t.Errorf("%s: none queries the MCP face (flowdrop_mcp_requests_total)", what)
		}
	}
}

// TestAlertsHaveRunbooks: every alert links (runbook_url) to a section of
// docs/runbooks.md that exists, named after the alert.
func TestAlertsHaveRunbooks(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	const base = "https://github.com/flowdrop/gateway/blob/main/docs/runbooks.md#"
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
			if !ok || anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q, want %s%s", r.Alert, r.Annotations["runbook_url"], base, strings.ToLower(r.Alert))
			}
			if !strings.Contains(string(doc), "\n## "+r.Alert+"\n") {
				t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", r.Alert, r.Alert)
			}
		}
	}
	for _, want := range []string{"FlowDropTargetDown", "FlowDropNotReady"} {
		if !strings.Contains(string(b), "alert: "+want+"\n") {
			t.Errorf("no %s alert", want)
		}
	}
	if n == 0 {
		t.Fatal("no alert rules read")
	}
}

// TestDashboardFiltersByJobAndInstance: the dashboard has job and instance
// variables and every query honours both, so one dashboard serves several
// deployments and a single replica can be looked at.
func TestDashboardFiltersByJobAndInstance(t *testing.T) {
	var dash struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err := os.ReadFile("grafana/flowdrop-gateway.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	if !vars["job"] || !vars["instance"] {
		t.Errorf("dashboard variables %v, want job and instance", vars)
	}
	selector := regexp.MustCompile(`\b(?:flowdrop_[a-z_]+|grpc_server_[a-z_]+)(\{[^}]*\})?`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(m[1], `job=~"$job"`) || !strings.Contains(m[1], `instance=~"$instance"`) {
					t.Errorf("panel %q: %s does not filter by $job and $instance", p.Title, m[0])
				}
			}
		}
	}
}
