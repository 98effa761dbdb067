package loadgen

import (
	"math"
	"slices"
	"time"
)

// Latencies are kept as raw samples and sorted once at the end, and
// percentiles are exact nearest-rank values. No histogram library: none is in
// go.mod, and a 10 s run at even 50k calls/s is 500k int64s (4 MB) — sorting
// that is cheaper than being approximately right.

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted, the smallest sample with at least p% of samples at or below it. It
// returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Stats is the raw outcome of one run.
type Stats struct {
	Sent      int64           // calls started
	Calls     int64           // calls completed, successfully or not
	Errors    int64           // completed calls that returned an error
	Dropped   int64           // open loop: scheduled sends never made before the hard stop
	Elapsed   time.Duration   // first send to last completion
	Latencies []time.Duration // successful calls only, sorted ascending
	// FirstError is the first error's text, so a run full of failures says why.
	FirstError string
}

// Result is one run as the driver prints it: one JSON line.
type Result struct {
	// Label names what was measured when the target kind alone does not
	// (e.g. "decode-proxy" for a proxy in decode mode); Round is the
	// interleaved round it belongs to. Both are the harness's bookkeeping.
	Label          string  `json:"label,omitempty"`
	Round          int     `json:"round,omitempty"`
	Target         string  `json:"target"`
	Mode           string  `json:"mode"`
	Payload        string  `json:"payload"`
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	MaxOutstanding int     `json:"max_outstanding,omitempty"`
	DurationS      float64 `json:"duration_s"`
	Sent           int64   `json:"sent"`
	Calls          int64   `json:"calls"`
	Errors         int64   `json:"errors"`
	Dropped        int64   `json:"dropped"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	P50us          float64 `json:"p50_us"`
	P90us          float64 `json:"p90_us"`
	P99us          float64 `json:"p99_us"`
	MaxUs          float64 `json:"max_us"`
	FirstError     string  `json:"first_error,omitempty"`
	// Face is the protocol driven: "grpc" (the default, omitted) or "mcp".
	// Conns is how many gRPC client connections carried the calls; an MCP
	// run has Concurrency sessions instead.
	Face  string `json:"face,omitempty"`
	Conns int    `json:"conns,omitempty"`
	// The measured process's costs over the measured window (Probe), each
	// only when the harness gave the driver what it needs to read it: CPU
	// per completed call, peak resident memory (VmHWM; over this run, or
	// over the process's life when PeakRSSLifetime), bytes the Go runtime
	// allocated per call, and TCP connections the echo upstream accepted
	// per call (a pointer: 0 is a result).
	CPUusPerCall         float64  `json:"cpu_us_per_call,omitempty"`
	PeakRSSMiB           float64  `json:"peak_rss_mib,omitempty"`
	PeakRSSLifetime      bool     `json:"peak_rss_lifetime,omitempty"`
	AllocBytesPerCall    float64  `json:"alloc_bytes_per_call,omitempty"`
	UpstreamConnsPerCall *float64 `json:"upstream_conns_per_call,omitempty"`
	// DriverCPUusPerCall is the driver's own CPU per call: on a shared
	// machine it says how much of the CPU the load itself took.
	DriverCPUusPerCall float64 `json:"driver_cpu_us_per_call,omitempty"`
}

// Fill copies s into r: counts, successful calls per second of elapsed time,
// and percentiles in microseconds.
func (s Stats) Fill(r *Result) {
	r.Sent, r.Calls, r.Errors, r.Dropped = s.Sent, s.Calls, s.Errors, s.Dropped
	r.FirstError = s.FirstError
	r.DurationS = round(s.Elapsed.Seconds(), 3)
	if s.Elapsed > 0 {
		r.ThroughputPerS = round(float64(s.Calls-s.Errors)/s.Elapsed.Seconds(), 1)
	}
	us := func(d time.Duration) float64 { return round(float64(d)/float64(time.Microsecond), 1) }
	r.P50us = us(Percentile(s.Latencies, 50))
	r.P90us = us(Percentile(s.Latencies, 90))
	r.P99us = us(Percentile(s.Latencies, 99))
	if n := len(s.Latencies); n > 0 {
		r.MaxUs = us(s.Latencies[n-1])
	}
}

func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// merge joins per-worker samples and sorts them.
func merge(parts [][]time.Duration) []time.Duration {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	all := make([]time.Duration, 0, n)
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.Sort(all)
	return all
}
