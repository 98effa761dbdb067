package loadgen

import (
	"math"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs     []float64
		want   float64
		reason string
	}{
		{[]float64{3, 1, 2}, 2, "odd count: the middle value after sorting"},
		{[]float64{4, 1, 3, 2}, 2.5, "even count: mean of the middle two"},
		{[]float64{7}, 7, "one round is its own median"},
	} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v (%s)", tc.xs, got, tc.want, tc.reason)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) must be NaN, not a made-up 0")
	}
}

func TestSummarizeRatios(t *testing.T) {
	closed := func(label string, round int, thr float64) Result {
		return Result{Label: label, Round: round, Mode: "closed", ThroughputPerS: thr}
	}
	open := func(label string, round int, p50 float64) Result {
		return Result{Label: label, Round: round, Mode: "open", P50us: p50}
	}
	in := []Result{
		closed("direct", 1, 10000), closed("proxy", 1, 5000), closed("decode-proxy", 1, 3750), closed("gateway", 1, 4000),
		closed("direct", 2, 12000), closed("proxy", 2, 6000), closed("decode-proxy", 2, 4500), closed("gateway", 2, 6000),
		closed("direct", 3, 11000), closed("proxy", 3, 5500), closed("decode-proxy", 3, 4000), closed("gateway", 3, 5000),
		open("direct", 1, 300), open("proxy", 1, 900), open("gateway", 1, 1200),
		open("direct", 2, 200), open("proxy", 2, 800), open("gateway", 2, 900),
		open("direct", 3, 250), open("proxy", 3, 850), open("gateway", 3, 1000),
	}
	rows, ratios := Summarize(in)
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7 (4 closed + 3 open)", len(rows))
	}
	want := map[string]struct {
		v      float64
		pass   *bool
		reason string
	}{
		"proxy/direct throughput (closed)":       {5500.0 / 11000, nil, "ratio of the medians 5500/11000"},
		"decode-proxy/proxy throughput (closed)": {4000.0 / 5500, nil, "ratio of the medians 4000/5500"},
		"gateway/proxy throughput (closed)":      {5000.0 / 5500, ptr(true), "0.91 ≥ 0.85"},
		"gateway/proxy added p50 (open)":         {(1000.0 - 250) / (850 - 250), ptr(true), "(1000−250)/(850−250)=1.25, the bound itself passes"},
	}
	for _, r := range ratios {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected ratio %q", r.Name)
			continue
		}
		if math.Abs(r.Value-w.v) > 1e-9 {
			t.Errorf("%s = %v, want %v (%s)", r.Name, r.Value, w.v, w.reason)
		}
		if (w.pass == nil) != (r.Pass == nil) || (w.pass != nil && *w.pass != *r.Pass) {
			t.Errorf("%s pass = %v, want %v (%s)", r.Name, r.Pass, w.pass, w.reason)
		}
		if len(r.PerRound) != 3 {
			t.Errorf("%s: %d per-round values, want 3", r.Name, len(r.PerRound))
		}
	}
	// Round 1 of the gateway/proxy throughput: 4000/5000.
	if got := ratios[2].PerRound[0]; got != 0.8 {
		t.Errorf("gateway/proxy round 1 = %v, want 0.8: rounds must pair by round number", got)
	}
	var b strings.Builder
	if err := WriteSummary(&b, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| gateway/proxy throughput (closed) | 0.91 | 0.91 | 0.80, 1.00, 0.91 | ≥ 0.85 — met |") {
		t.Errorf("summary table missing the gateway ratio row:\n%s", b.String())
	}
}

func TestSummarizeBaseline(t *testing.T) {
	closed := func(label string, round int, thr float64) Result {
		return Result{Label: label, Round: round, Mode: "closed", ThroughputPerS: thr}
	}
	open := func(label string, round int, p50 float64) Result {
		return Result{Label: label, Round: round, Mode: "open", P50us: p50}
	}
	in := []Result{
		closed("direct", 1, 10000), closed("proxy", 1, 5000), closed("gateway", 1, 4000), closed("baseline", 1, 5000),
		closed("direct", 2, 12000), closed("proxy", 2, 6000), closed("gateway", 2, 6000), closed("baseline", 2, 4000),
		open("direct", 1, 300), open("proxy", 1, 900), open("gateway", 1, 1200), open("baseline", 1, 1500),
		open("direct", 2, 200), open("proxy", 2, 800), open("gateway", 2, 900), open("baseline", 2, 200),
	}
	_, ratios := Summarize(in)
	got := map[string]Ratio{}
	for _, r := range ratios {
		got[r.Name] = r
	}
	thr, ok := got["gateway/baseline throughput (closed)"]
	if !ok {
		t.Fatalf("no gateway/baseline throughput ratio among %d ratios", len(ratios))
	}
	// Medians: gateway 5000, baseline 4500.
	if math.Abs(thr.Value-5000.0/4500) > 1e-9 || thr.Pass != nil {
		t.Errorf("throughput = %v pass %v, want 5000/4500 and no target", thr.Value, thr.Pass)
	}
	if len(thr.PerRound) != 2 || thr.PerRound[0] != 0.8 || thr.PerRound[1] != 1.5 {
		t.Errorf("throughput per round = %v, want [0.8 1.5] (4000/5000, 6000/4000)", thr.PerRound)
	}
	added, ok := got["gateway/baseline added p50 (open)"]
	if !ok {
		t.Fatal("no gateway/baseline added p50 ratio")
	}
	// Medians: direct 250, gateway 1050, baseline 850: (1050−250)/(850−250).
	if math.Abs(added.Value-800.0/600) > 1e-9 || added.Pass != nil {
		t.Errorf("added p50 = %v pass %v, want 800/600 and no target", added.Value, added.Pass)
	}
	// Round 1: (1200−300)/(1500−300) = 0.75. Round 2: the baseline adds
	// nothing over direct, so there is no ratio to give.
	if len(added.PerRound) != 2 || added.PerRound[0] != 0.75 || !math.IsNaN(added.PerRound[1]) {
		t.Errorf("added p50 per round = %v, want [0.75 NaN]", added.PerRound)
	}
	// The gateway's own ratios against the proxy are still computed as without a baseline.
	if r := got["gateway/proxy throughput (closed)"]; math.Abs(r.Value-5000.0/5500) > 1e-9 {
		t.Errorf("gateway/proxy throughput = %v, want 5000/5500", r.Value)
	}
	var b strings.Builder
	if err := WriteSummary(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| closed | baseline | 2 | 4500 | 4000–5000 |",
		"| open | baseline | 2 | 0 | 0–0 | 850 | 0 | 0 | 600 |", // added p50 850−250
		"| gateway/baseline throughput (closed) | 1.11 | 1.15 | 0.80, 1.50 |  |",
		"| gateway/baseline added p50 (open) | 1.33 | n/a | 0.75, NaN |  |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestSummarizeMissingGateway(t *testing.T) {
	_, ratios := Summarize([]Result{
		{Label: "direct", Mode: "closed", ThroughputPerS: 10},
		{Label: "proxy", Mode: "closed", ThroughputPerS: 5},
	})
	for _, r := range ratios[2:] {
		if !math.IsNaN(r.Value) || r.Pass != nil {
			t.Errorf("%s = %v pass %v: a missing target must read n/a, never pass", r.Name, r.Value, r.Pass)
		}
	}
}

func TestReadResultsNamesBadLine(t *testing.T) {
	_, err := ReadResults(strings.NewReader(`{"target":"direct"}` + "\n" + `{oops` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSummarizePeerAndProdRatios: with nginx, HAProxy and gateway-prod in
// the results, issue 14's ratios appear, each against its bound.
func TestSummarizePeerAndProdRatios(t *testing.T) {
	var in []Result
	for r := 1; r <= 2; r++ {
		in = append(in,
			Result{Label: "direct", Round: r, Mode: "closed", ThroughputPerS: 20000},
			Result{Label: "nginx", Round: r, Mode: "closed", ThroughputPerS: 10000},
			Result{Label: "haproxy", Round: r, Mode: "closed", ThroughputPerS: 13000},
			Result{Label: "gateway", Round: r, Mode: "closed", ThroughputPerS: 9000},
			Result{Label: "gateway-prod", Round: r, Mode: "closed", ThroughputPerS: 5400},
			Result{Label: "gateway-repair", Round: r, Mode: "closed", ThroughputPerS: 8100},
			Result{Label: "gateway-prod-repair", Round: r, Mode: "closed", ThroughputPerS: 4320},
			Result{Label: "baseline-prod", Round: r, Mode: "closed", ThroughputPerS: 4500},
			Result{Label: "baseline-prod", Round: r, Mode: "open", P50us: 1100},
			Result{Label: "direct", Round: r, Mode: "open", P50us: 600},
			Result{Label: "nginx", Round: r, Mode: "open", P50us: 800},
			Result{Label: "gateway", Round: r, Mode: "open", P50us: 850},
			Result{Label: "gateway-prod", Round: r, Mode: "open", P50us: 950},
		)
	}
	_, ratios := Summarize(in)
	want := map[string]struct {
		v      float64
		pass   *bool
		reason string
	}{
		"nginx/direct throughput (closed)":                     {0.5, nil, "informational"},
		"haproxy/nginx throughput (closed)":                    {1.3, nil, "informational"},
		"gateway/nginx throughput (closed)":                    {0.9, ptr(false), "0.90 < 1.00 (issue 30)"},
		"gateway/haproxy throughput (closed)":                  {9000.0 / 13000, ptr(false), "0.69 < 0.85 (issue 30's stretch)"},
		"gateway-prod/gateway throughput (closed)":             {0.6, ptr(false), "0.60 < 0.90 (issue 30)"},
		"gateway-prod/nginx added p50 (open)":                  {350.0 / 200, ptr(false), "(950−600)/(800−600) = 1.75 > 1.5"},
		"gateway/nginx added p50 (open)":                       {250.0 / 200, ptr(true), "(850−600)/(800−600) = 1.25 ≤ 1.3 (issue 30)"},
		"gateway-repair/gateway throughput (closed)":           {0.9, ptr(true), "0.90 ≥ 0.85"},
		"gateway-prod-repair/gateway-prod throughput (closed)": {0.8, ptr(false), "0.80 < 0.85"},
		"gateway-prod/baseline-prod throughput (closed)":       {1.2, nil, "informational"},
		"gateway-prod/baseline-prod added p50 (open)":          {350.0 / 500, nil, "informational"},
	}
	got := map[string]Ratio{}
	for _, r := range ratios {
		got[r.Name] = r
	}
	for name, w := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("ratio %q missing (%s)", name, w.reason)
			continue
		}
		if math.Abs(r.Value-w.v) > 1e-9 {
			t.Errorf("%s = %v, want %v (%s)", name, r.Value, w.v, w.reason)
		}
		if (w.pass == nil) != (r.Pass == nil) || (w.pass != nil && *w.pass != *r.Pass) {
			t.Errorf("%s pass = %v, want %v (%s)", name, r.Pass, w.pass, w.reason)
		}
	}
}

// TestTargetsJudgedPerRound: a target is held to the median of the paired
// per-round ratios, not the ratio of the medians — here the medians give
// 0.88 (8800/10000: the median gateway-prod run sits in another round than
// the median gateway run) while the rounds give 0.88, 0.92, 0.95.
func TestTargetsJudgedPerRound(t *testing.T) {
	in := []Result{
		{Label: "gateway", Round: 1, Mode: "closed", ThroughputPerS: 10000},
		{Label: "gateway-prod", Round: 1, Mode: "closed", ThroughputPerS: 8800},
		{Label: "gateway", Round: 2, Mode: "closed", ThroughputPerS: 12000},
		{Label: "gateway-prod", Round: 2, Mode: "closed", ThroughputPerS: 11040},
		{Label: "gateway", Round: 3, Mode: "closed", ThroughputPerS: 8000},
		{Label: "gateway-prod", Round: 3, Mode: "closed", ThroughputPerS: 7600},
	}
	_, ratios := Summarize(in)
	for _, r := range ratios {
		if r.Name != "gateway-prod/gateway throughput (closed)" {
			continue
		}
		if math.Abs(r.Value-0.88) > 1e-9 {
			t.Errorf("value of medians %v, want 0.88 (8800/10000)", r.Value)
		}
		if got := r.Judged(); math.Abs(got-0.92) > 1e-9 {
			t.Errorf("judged %v, want 0.92: the median of 0.88, 0.92, 0.95", got)
		}
		if r.Pass == nil || !*r.Pass {
			t.Errorf("pass = %v, want met (0.92 ≥ 0.90 judged per round, though 0.88 of medians)", r.Pass)
		}
		return
	}
	t.Fatal("gateway-prod/gateway ratio missing")
}

// TestSummarizeMCP: the MCP targets' ratios against their bounds (issue 30
// targets 2 and 4), their added p50 counted from the echo upstream called
// directly (not the gRPC backend), and the per-call costs as medians of the
// rounds that measured them.
func TestSummarizeMCP(t *testing.T) {
	conns := func(v float64) *float64 { return &v }
	var in []Result
	for r := 1; r <= 3; r++ {
		in = append(in,
			Result{Label: "mcp-direct", Round: r, Mode: "closed", ThroughputPerS: 2000, P50us: 8000, CPUusPerCall: 300, PeakRSSMiB: 20, UpstreamConnsPerCall: conns(0)},
			Result{Label: "mcp-peer", Round: r, Mode: "closed", ThroughputPerS: 1300, P50us: 12000, CPUusPerCall: 600, PeakRSSMiB: 18, UpstreamConnsPerCall: conns(0.6)},
			Result{Label: "gateway-mcp", Round: r, Mode: "closed", ThroughputPerS: 1300 * (0.5 + 0.25*float64(r)), P50us: 20000,
				CPUusPerCall: 1000 + float64(r), PeakRSSMiB: 70, AllocBytesPerCall: 500000, UpstreamConnsPerCall: conns(0.01 * float64(r))},
			Result{Label: "gateway-mcp-prod", Round: r, Mode: "closed", ThroughputPerS: 1300 * (0.5 + 0.25*float64(r)) * 0.95, P50us: 21000},
			Result{Label: "gateway-mcp-backend", Round: r, Mode: "closed", ThroughputPerS: 1900, P50us: 8500, DriverCPUusPerCall: 150},
			Result{Label: "gateway-grpc-mcp", Round: r, Mode: "closed", ThroughputPerS: 900, P50us: 15000},
			Result{Label: "baseline-mcp", Round: r, Mode: "closed", ThroughputPerS: 1300, P50us: 8000 + 6000*float64(r)},
		)
	}
	_, ratios := Summarize(in)
	got := map[string]Ratio{}
	for _, r := range ratios {
		got[r.Name] = r
	}
	for _, w := range []struct {
		name   string
		judged float64
		pass   *bool
		reason string
	}{
		{"gateway-mcp/mcp-peer throughput (closed)", 1.0, ptr(true), "rounds 0.75, 1.00, 1.25: the median 1.00 meets ≥ 1.00"},
		{"gateway-mcp/mcp-direct throughput (closed)", 0.65, ptr(false), "1300/2000 in the middle round: < 0.70"},
		{"gateway-mcp-prod/gateway-mcp throughput (closed)", 0.95, ptr(true), "0.95 ≥ 0.90"},
		{"gateway-mcp-backend/mcp-direct throughput (closed)", 0.95, ptr(false), "1900/2000 < 1.00"},
		{"mcp-peer/mcp-direct throughput (closed)", 0.65, nil, "informational"},
		{"gateway-grpc-mcp/mcp-direct throughput (closed)", 0.45, nil, "informational"},
		{"gateway-mcp/baseline-mcp throughput (closed)", 1.0, nil, "before/after: rounds 0.75, 1.00, 1.25"},
		{"gateway-mcp/baseline-mcp added p50 (closed)", 1.0, nil, "12 ms added over the echo upstream against baseline's 6, 12, 18 ms: rounds 2, 1, 0.67, median 1"},
	} {
		r, ok := got[w.name]
		if !ok {
			t.Errorf("ratio %q missing (%s)", w.name, w.reason)
			continue
		}
		if math.Abs(r.Judged()-w.judged) > 1e-9 {
			t.Errorf("%s judged %v, want %v (%s)", w.name, r.Judged(), w.judged, w.reason)
		}
		if (w.pass == nil) != (r.Pass == nil) || (w.pass != nil && *w.pass != *r.Pass) {
			t.Errorf("%s pass = %v, want %v (%s)", w.name, r.Pass, w.pass, w.reason)
		}
	}
	for _, r := range ratios {
		if strings.HasPrefix(r.Name, "proxy/") || strings.HasPrefix(r.Name, "gateway/proxy") || strings.HasPrefix(r.Name, "decode-proxy/") {
			t.Errorf("ratio %q in a run without the gRPC reference hops (FACES=mcp): it can only read n/a", r.Name)
		}
	}
	var b strings.Builder
	if err := WriteSummary(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// added p50 20000−8000 (mcp-direct); CPU the median 1002;
		// connections the median 0.02.
		"| closed | gateway-mcp | 3 | 1300 | 975–1625 | 20000 | 0 | 0 | 12000 | 0 | 0 | 1002 | 70.0 | 500000 | 0.0200 | — |",
		"| closed | mcp-direct | 3 | 2000 | 2000–2000 | 8000 | 0 | 0 | — | 0 | 0 | 300 | 20.0 | — | 0.0000 |",
		// a target without costs measured shows none
		"| closed | gateway-mcp-backend | 3 | 1900 | 1900–1900 | 8500 | 0 | 0 | 500 | 0 | 0 | — | — | — | — | 150 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	// Beside the gRPC targets (FACES=both) the MCP rows still count from
	// mcp-direct, not from the gRPC backend's p50.
	both := append(in, Result{Label: "direct", Round: 1, Mode: "closed", ThroughputPerS: 9000, P50us: 1000})
	b.Reset()
	if err := WriteSummary(&b, both); err != nil {
		t.Fatal(err)
	}
	if want := "| closed | gateway-mcp | 3 | 1300 | 975–1625 | 20000 | 0 | 0 | 12000 |"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q (added p50 from mcp-direct, not 20000−1000):\n%s", want, b.String())
	}
}
