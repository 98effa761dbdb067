package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Labels the harness gives its targets; the ratios are defined on them.
// LabelBaseline is the gateway built from another commit (run.sh's
// BASELINE_REF); it is measured only when that is set.
const (
	LabelDirect      = "direct"
	LabelProxy       = "proxy"
	LabelDecodeProxy = "decode-proxy"
	LabelGateway     = "gateway"
	LabelBaseline    = "baseline"
	// The peers and the deployed configuration (issue 14), measured when
	// run.sh has them: nginx's and HAProxy's gRPC proxying in front of the
	// same backend, and the gateway running tools/bench/prod-policy.yaml.
	LabelNginx       = "nginx"
	LabelHAProxy     = "haproxy"
	LabelGatewayProd = "gateway-prod"
	// LabelBaselineProd is the baseline build on the production policy,
	// measured when run.sh has both BASELINE_REF and gateway-prod.
	LabelBaselineProd = "baseline-prod"
	// The gateways sent the repair payload in a clean-payload run, so
	// repair/clean is a ratio of one run (run.sh's REPAIR).
	LabelGatewayRepair     = "gateway-repair"
	LabelGatewayProdRepair = "gateway-prod-repair"
	// The MCP targets (issue 30), all in front of one echo upstream
	// (flowdrop-loadgen mcp-upstream): the upstream called directly, the
	// peer MCP proxy (tbxark/mcp-proxy, when run.sh has PEER_MCP_PROXY),
	// the gateway's MCP face auth off and on the production policy, the
	// gateway's gRPC InvokeTool to the same upstream, and the gateway's MCP
	// face in front of the bench ToolBackendService instead.
	LabelMCPDirect         = "mcp-direct"
	LabelMCPPeer           = "mcp-peer"
	LabelGatewayMCP        = "gateway-mcp"
	LabelGatewayMCPProd    = "gateway-mcp-prod"
	LabelGatewayGRPCMCP    = "gateway-grpc-mcp"
	LabelGatewayMCPBackend = "gateway-mcp-backend"
	// LabelBaselineMCP is the baseline build's MCP face, auth off, in front
	// of the same echo upstream (run.sh's BASELINE_REF with the MCP targets).
	LabelBaselineMCP = "baseline-mcp"
)

// mcpGroup reports whether label is one of the MCP targets, whose added
// latency is against the echo upstream called directly rather than the
// gRPC backend.
func mcpGroup(label string) bool {
	switch label {
	case LabelMCPDirect, LabelMCPPeer, LabelGatewayMCP, LabelGatewayMCPProd, LabelGatewayGRPCMCP, LabelGatewayMCPBackend, LabelBaselineMCP:
		return true
	}
	return false
}

// ReadResults parses drive's JSON lines, naming the line of any bad one.
func ReadResults(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, fmt.Errorf("results line %d: %v", n, err)
		}
		if res.Label == "" {
			res.Label = res.Target
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// Row is one label and mode summarized over its rounds (medians).
type Row struct {
	Label, Mode                  string
	Rounds                       int
	Throughput                   float64
	P50us, P90us, P99us          float64
	Errors, Dropped              int64
	ThroughputMin, ThroughputMax float64
	// Medians of the measured process's per-call costs over the rounds
	// that have them; NaN where none has (Result's fields).
	CPUusPerCall, PeakRSSMiB, AllocBytesPerCall, UpstreamConnsPerCall float64
	DriverCPUusPerCall                                                float64
	// PeakRSSLifetime: some round's peak is the process's lifetime's.
	PeakRSSLifetime bool
}

// Ratio is one comparison the issue asks for: the ratio of the medians,
// the same ratio per round (interleaved rounds pair up fairly), and the
// target it is held to, if any.
type Ratio struct {
	Name     string
	Value    float64 // NaN when an input is missing
	PerRound []float64
	Target   string // "≥ 0.85", "≤ 1.25" or ""
	Pass     *bool  // Judged() against Target
}

// Judged is what a target is held to: the median of the per-round ratios
// (rounds are interleaved, so each round pairs its targets under the same
// conditions), or the ratio of the medians when no round pairs up.
func (r Ratio) Judged() float64 {
	var ok []float64
	for _, v := range r.PerRound {
		if !math.IsNaN(v) {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return r.Value
	}
	return Median(ok)
}

// Median of xs (mean of the middle two for an even count); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

var nan = math.NaN()

// Summarize reduces results to per-(label, mode) medians and the ratios:
// proxy/direct, decode-proxy/proxy and gateway/proxy closed-loop
// throughput, and the gateway's added open-loop p50 relative to the bare
// proxy's, (gateway − direct) / (proxy − direct). When the results hold a
// baseline gateway, two more follow, without targets: gateway/baseline
// throughput and added p50, (gateway − direct) / (baseline − direct).
func Summarize(results []Result) ([]Row, []Ratio) {
	type key struct{ label, mode string }
	groups := map[key][]Result{}
	var order []key
	for _, r := range results {
		k := key{r.Label, r.Mode}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	rows := make([]Row, 0, len(order))
	row := map[key]Row{}
	for _, k := range order {
		g := groups[k]
		pick := func(f func(Result) float64) []float64 {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return xs
		}
		thr := pick(func(r Result) float64 { return r.ThroughputPerS })
		rw := Row{Label: k.label, Mode: k.mode, Rounds: len(g),
			Throughput:    Median(thr),
			P50us:         Median(pick(func(r Result) float64 { return r.P50us })),
			P90us:         Median(pick(func(r Result) float64 { return r.P90us })),
			P99us:         Median(pick(func(r Result) float64 { return r.P99us })),
			ThroughputMin: slices.Min(thr), ThroughputMax: slices.Max(thr),
		}
		// present: the rounds' values of a cost that was measured.
		present := func(f func(Result) (float64, bool)) float64 {
			var xs []float64
			for _, r := range g {
				if v, ok := f(r); ok {
					xs = append(xs, v)
				}
			}
			return Median(xs)
		}
		rw.CPUusPerCall = present(func(r Result) (float64, bool) { return r.CPUusPerCall, r.CPUusPerCall > 0 })
		rw.PeakRSSMiB = present(func(r Result) (float64, bool) { return r.PeakRSSMiB, r.PeakRSSMiB > 0 })
		rw.AllocBytesPerCall = present(func(r Result) (float64, bool) { return r.AllocBytesPerCall, r.AllocBytesPerCall > 0 })
		rw.DriverCPUusPerCall = present(func(r Result) (float64, bool) { return r.DriverCPUusPerCall, r.DriverCPUusPerCall > 0 })
		rw.UpstreamConnsPerCall = present(func(r Result) (float64, bool) {
			if r.UpstreamConnsPerCall == nil {
				return 0, false
			}
			return *r.UpstreamConnsPerCall, true
		})
		for _, r := range g {
			rw.Errors += r.Errors
			rw.Dropped += r.Dropped
			rw.PeakRSSLifetime = rw.PeakRSSLifetime || r.PeakRSSLifetime
		}
		rows = append(rows, rw)
		row[k] = rw
	}

	// perRound pairs values of two labels by round number.
	perRound := func(mode, a, b string, f func(x, y Result) float64) []float64 {
		byRound := map[int]Result{}
		for _, r := range groups[key{b, mode}] {
			byRound[r.Round] = r
		}
		var out []float64
		for _, r := range groups[key{a, mode}] {
			if o, ok := byRound[r.Round]; ok {
				out = append(out, f(r, o))
			}
		}
		return out
	}
	thrRatio := func(name, a, b, target string, min float64) Ratio {
		ra, oka := row[key{a, "closed"}]
		rb, okb := row[key{b, "closed"}]
		r := Ratio{Name: name, Value: nan, Target: target,
			PerRound: perRound("closed", a, b, func(x, y Result) float64 { return x.ThroughputPerS / y.ThroughputPerS })}
		if oka && okb && rb.Throughput > 0 {
			r.Value = ra.Throughput / rb.Throughput
			if target != "" {
				p := r.Judged() >= min
				r.Pass = &p
			}
		}
		return r
	}
	// Issue 3's ratios, always shown (n/a when an input is missing) — unless
	// the run measured no gRPC reference hop at all (run.sh FACES=mcp).
	var ratios []Ratio
	grpcRun := false
	for k := range row {
		grpcRun = grpcRun || k.label == LabelDirect || k.label == LabelProxy
	}
	if grpcRun {
		ratios = append(ratios,
			thrRatio("proxy/direct throughput (closed)", LabelProxy, LabelDirect, "", 0),
			thrRatio("decode-proxy/proxy throughput (closed)", LabelDecodeProxy, LabelProxy, "", 0),
			thrRatio("gateway/proxy throughput (closed)", LabelGateway, LabelProxy, "≥ 0.85", 0.85),
		)
	}
	// addedRatioOver is a's p50 above directLabel's over b's, all in mode;
	// NaN where b adds nothing (the ratio would be meaningless) or an
	// input is missing.
	addedRatioOver := func(name, mode, directLabel, a, b, target string, bound float64) Ratio {
		direct := map[int]Result{}
		for _, r := range groups[key{directLabel, mode}] {
			direct[r.Round] = r
		}
		r := Ratio{Name: name, Value: nan, Target: target}
		d, okd := row[key{directLabel, mode}]
		ra, oka := row[key{a, mode}]
		rb, okb := row[key{b, mode}]
		if okd && oka && okb && rb.P50us > d.P50us {
			r.Value = (ra.P50us - d.P50us) / (rb.P50us - d.P50us)
		}
		r.PerRound = perRound(mode, a, b, func(x, y Result) float64 {
			d, ok := direct[x.Round]
			if !ok || y.P50us <= d.P50us {
				return nan
			}
			return (x.P50us - d.P50us) / (y.P50us - d.P50us)
		})
		if target != "" && !math.IsNaN(r.Value) {
			pass := r.Judged() <= bound
			r.Pass = &pass
		}
		return r
	}
	// addedRatio: the gRPC targets' open-loop p50 above the backend's.
	addedRatio := func(name, a, b, target string, bound float64) Ratio {
		return addedRatioOver(name, "open", LabelDirect, a, b, target, bound)
	}
	if grpcRun {
		ratios = append(ratios, addedRatio("gateway/proxy added p50 (open)", LabelGateway, LabelProxy, "≤ 1.25", 1.25))
	}
	// Only with a baseline in the results, so a run without one prints what
	// it always has.
	if _, ok := row[key{LabelBaseline, "closed"}]; ok {
		ratios = append(ratios, thrRatio("gateway/baseline throughput (closed)", LabelGateway, LabelBaseline, "", 0))
	}
	if _, ok := row[key{LabelBaseline, "open"}]; ok {
		ratios = append(ratios, addedRatio("gateway/baseline added p50 (open)", LabelGateway, LabelBaseline, "", 0))
	}
	// Issue 14's targets, each only when both its labels were measured.
	has := func(label, mode string) bool { _, ok := row[key{label, mode}]; return ok }
	if has(LabelNginx, "closed") {
		ratios = append(ratios, thrRatio("nginx/direct throughput (closed)", LabelNginx, LabelDirect, "", 0))
		if has(LabelHAProxy, "closed") {
			ratios = append(ratios, thrRatio("haproxy/nginx throughput (closed)", LabelHAProxy, LabelNginx, "", 0))
		}
		// Issue 30 target 3 (with several client connections): at
		// least nginx's throughput, and HAProxy's ×0.85 as the stretch.
		ratios = append(ratios, thrRatio("gateway/nginx throughput (closed)", LabelGateway, LabelNginx, "≥ 1.00", 1.00))
	}
	if has(LabelHAProxy, "closed") {
		ratios = append(ratios, thrRatio("gateway/haproxy throughput (closed)", LabelGateway, LabelHAProxy, "≥ 0.85 (stretch)", 0.85))
	}
	if has(LabelGatewayProd, "closed") {
		ratios = append(ratios, thrRatio("gateway-prod/gateway throughput (closed)", LabelGatewayProd, LabelGateway, "≥ 0.90", 0.90))
	}
	if has(LabelGatewayRepair, "closed") {
		ratios = append(ratios, thrRatio("gateway-repair/gateway throughput (closed)", LabelGatewayRepair, LabelGateway, "≥ 0.85", 0.85))
	}
	if has(LabelGatewayProdRepair, "closed") {
		ratios = append(ratios, thrRatio("gateway-prod-repair/gateway-prod throughput (closed)", LabelGatewayProdRepair, LabelGatewayProd, "≥ 0.85", 0.85))
	}
	if has(LabelBaselineProd, "closed") {
		ratios = append(ratios, thrRatio("gateway-prod/baseline-prod throughput (closed)", LabelGatewayProd, LabelBaselineProd, "", 0))
	}
	if has(LabelBaselineProd, "open") {
		ratios = append(ratios, addedRatio("gateway-prod/baseline-prod added p50 (open)", LabelGatewayProd, LabelBaselineProd, "", 0))
	}
	if has(LabelGatewayProd, "open") && has(LabelNginx, "open") {
		ratios = append(ratios, addedRatio("gateway-prod/nginx added p50 (open)", LabelGatewayProd, LabelNginx, "≤ 1.5", 1.5))
	}
	if has(LabelGateway, "open") && has(LabelNginx, "open") {
		ratios = append(ratios, addedRatio("gateway/nginx added p50 (open)", LabelGateway, LabelNginx, "≤ 1.3", 1.3))
	}
	// Issue 30's MCP targets (2 and 4), each only when both its labels
	// were measured; the informational ones show where the others sit.
	for _, m := range []struct {
		name, a, b, target string
		min                float64
	}{
		{"gateway-mcp/mcp-peer throughput (closed)", LabelGatewayMCP, LabelMCPPeer, "≥ 1.00", 1.00},
		{"gateway-mcp/mcp-direct throughput (closed)", LabelGatewayMCP, LabelMCPDirect, "≥ 0.70", 0.70},
		{"gateway-mcp-prod/gateway-mcp throughput (closed)", LabelGatewayMCPProd, LabelGatewayMCP, "≥ 0.90", 0.90},
		{"gateway-mcp-backend/mcp-direct throughput (closed)", LabelGatewayMCPBackend, LabelMCPDirect, "≥ 1.00", 1.00},
		{"mcp-peer/mcp-direct throughput (closed)", LabelMCPPeer, LabelMCPDirect, "", 0},
		{"gateway-mcp-prod/mcp-peer throughput (closed)", LabelGatewayMCPProd, LabelMCPPeer, "", 0},
		{"gateway-grpc-mcp/mcp-direct throughput (closed)", LabelGatewayGRPCMCP, LabelMCPDirect, "", 0},
		{"gateway-mcp/baseline-mcp throughput (closed)", LabelGatewayMCP, LabelBaselineMCP, "", 0},
	} {
		if has(m.a, "closed") && has(m.b, "closed") {
			ratios = append(ratios, thrRatio(m.name, m.a, m.b, m.target, m.min))
		}
	}
	if has(LabelGatewayMCP, "closed") && has(LabelBaselineMCP, "closed") {
		// The MCP targets run closed loop only: added p50 over the echo
		// upstream's, at the same concurrency.
		ratios = append(ratios, addedRatioOver("gateway-mcp/baseline-mcp added p50 (closed)", "closed", LabelMCPDirect, LabelGatewayMCP, LabelBaselineMCP, "", 0))
	}
	return rows, ratios
}

// WriteSummary prints Summarize's table and ratios for humans (and for
// pasting into BENCHMARKS.md).
func WriteSummary(w io.Writer, results []Result) error {
	rows, ratios := Summarize(results)
	var b strings.Builder
	// direct[group][mode]: the floor each row's added p50 is counted from,
	// the gRPC backend or the MCP echo upstream.
	direct := map[bool]map[string]float64{false: {}, true: {}}
	for _, r := range rows {
		switch r.Label {
		case LabelDirect:
			direct[false][r.Mode] = r.P50us
		case LabelMCPDirect:
			direct[true][r.Mode] = r.P50us
		}
	}
	opt := func(v float64, format string) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf(format, v)
	}
	lifetime := false
	fmt.Fprintf(&b, "| mode | target | rounds | calls/s (median) | calls/s min–max | p50 µs | p90 µs | p99 µs | added p50 µs | errors | dropped | CPU µs/call | peak RSS MiB | alloc B/call | new upstream conns/call | driver CPU µs/call |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		addedP50 := "—"
		if d, ok := direct[mcpGroup(r.Label)][r.Mode]; ok && r.Label != LabelDirect && r.Label != LabelMCPDirect {
			addedP50 = fmt.Sprintf("%.0f", r.P50us-d)
		}
		rss := opt(r.PeakRSSMiB, "%.1f")
		if r.PeakRSSLifetime && rss != "—" {
			rss += "*"
			lifetime = true
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.0f–%.0f | %.0f | %.0f | %.0f | %s | %d | %d | %s | %s | %s | %s | %s |\n",
			r.Mode, r.Label, r.Rounds, r.Throughput, r.ThroughputMin, r.ThroughputMax, r.P50us, r.P90us, r.P99us, addedP50, r.Errors, r.Dropped,
			opt(r.CPUusPerCall, "%.0f"), rss, opt(r.AllocBytesPerCall, "%.0f"), opt(r.UpstreamConnsPerCall, "%.4f"), opt(r.DriverCPUusPerCall, "%.0f"))
	}
	if lifetime {
		fmt.Fprintf(&b, "\n\\* the process's lifetime peak (its VmHWM could not be reset before the run)\n")
	}
	fmt.Fprintf(&b, "\n| ratio | value (of medians) | median of per-round | per round | target (judged on the median of per-round) |\n|---|---:|---:|---|---|\n")
	for _, r := range ratios {
		val := "n/a"
		if !math.IsNaN(r.Value) {
			val = fmt.Sprintf("%.2f", r.Value)
		}
		per := make([]string, len(r.PerRound))
		for i, x := range r.PerRound {
			per[i] = fmt.Sprintf("%.2f", x)
		}
		target := r.Target
		if r.Pass != nil {
			target += map[bool]string{true: " — met", false: " — NOT met"}[*r.Pass]
		}
		perMed := "n/a"
		if m := Median(r.PerRound); !math.IsNaN(m) {
			perMed = fmt.Sprintf("%.2f", m)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Name, val, perMed, strings.Join(per, ", "), target)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
