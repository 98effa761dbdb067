package observe

import (
	"context"
	"time"

	"github.com/flowdrop/gateway/internal/buildinfo"

	"github.com/flowdrop/gateway/server/pipeline"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the gateway's Prometheus metrics, in a registry the gateway
// owns (not the global default), so tests can run several gateways. It is
// the pipeline's metrics Recorder.
//
// Label values are bounded: tool is a registered tool's name or "_unknown"
// (a model can send any tool name), reason a policy Reason, kind a repair kind.
type Metrics struct {
	reg       *prometheus.Registry
	grpc      *grpcprom.ServerMetrics
	repairs   *prometheus.CounterVec
	invalid   *prometheus.CounterVec
	denials   *prometheus.CounterVec
	backendH  *prometheus.HistogramVec
	addedH    *prometheus.HistogramVec
	mcpReqs   *prometheus.CounterVec
	outputBad *prometheus.CounterVec
	stageH    *prometheus.HistogramVec
	// stageObs are stageH's observers by stage index, resolved once
	// (SetStages), so a call observes its stages without label lookups.
	stageObs  []prometheus.Observer
	auditDrop prometheus.Counter
	traceLost prometheus.Counter
	// stdioStarts counts stdio MCP server starts by server (a configured
	// name: bounded) and result.
	stdioStarts *prometheus.CounterVec
	// sessionEvictions counts per-caller upstream MCP sessions closed by
	// their bound, by reason (cap or idle: bounded).
	sessionEvictions *prometheus.CounterVec
	// preAuth counts gRPC streams ended before they were authenticated
	// (reason: a policy Reason or one of grpcapi's two bounds: bounded).
	preAuth *prometheus.CounterVec
	errs    toolErrors // each tool's last error, for the status page
}

// NewMetrics registers the metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg:  prometheus.NewRegistry(),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(latencyBuckets))),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_repairs_total",
			Help: "Argument repairs made by RT-TOOL-8 normalization, by tool and repair kind."}, []string{"tool", "kind"}),
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_validation_failures_total",
			Help: "Calls whose normalized arguments failed the tool's schema."}, []string{"tool"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_policy_denials_total",
			Help: "Calls refused by policy (authentication, authorization, rules, limits), by tool and reason."}, []string{"tool", "reason"}),
		backendH: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowdrop_backend_latency_seconds",
			Help:    "Latency of backend calls, by tool and gRPC status code.",
			Buckets: latencyBuckets}, []string{"tool", "code"}),
		stageH: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowdrop_stage_seconds",
			Help:    "Time each pipeline stage took (caller, audit, role, identifiers, rate-limit, screen, normalize, validate, rules), over every tool.",
			Buckets: latencyBuckets}, []string{"stage"}),
		outputBad: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_output_violations_total",
			Help: "Tool results that failed the tool's output schema, by tool (answered per on_invalid_output)."}, []string{"tool"}),
		mcpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_mcp_requests_total",
			Help: "MCP requests by method (initialize, tools/list, tools/call, …; other) and outcome (ok, tool-error, error)."}, []string{"method", "outcome"}),
		addedH: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowdrop_gateway_added_seconds",
			Help:    "Time the gateway added to a tool call (the call's total minus its backend call), by tool: authentication, policy, normalization, validation, audit.",
			Buckets: latencyBuckets}, []string{"tool"}),
		auditDrop: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowdrop_audit_dropped_total",
			Help: "Audit records lost: not written (the write failed, e.g. a full disk) or dropped (the queue was full)."}),
		traceLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowdrop_trace_spans_lost_total",
			Help: "Spans the OTLP exporter failed to deliver (the collector down or refusing them); each failed export is logged, at most once a minute."}),
		stdioStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_mcp_stdio_starts_total",
			Help: "Starts of the stdio MCP servers the gateway runs, by server and result (ok: it answered initialize; failed)."}, []string{"server", "result"}),
		sessionEvictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_mcp_upstream_session_evictions_total",
			Help: "Per-caller sessions to upstream MCP servers (non-static upstream_identity) the gateway closed by their bound, by reason: cap (the least recently used made room for a new subject) or idle (unused for the idle time)."}, []string{"reason"}),
		preAuth: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_grpc_preauth_refusals_total",
			Help: "gRPC streams ended before the gateway read their message for an unauthenticated peer, by reason: the refused credential's reason (on the headers), unauthenticated-streams (over the per-connection cap) or receive-timeout (the message did not arrive in time)."}, []string{"reason"}),
	}
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "flowdrop_build_info",
		Help:        "The running build: always 1, its labels say which (version, revision, Go).",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.ShortRevision(), "goversion": bi.GoVersion}})
	build.Set(1)
	m.reg.MustRegister(build)
	m.reg.MustRegister(m.grpc, m.repairs, m.invalid, m.denials, m.backendH, m.addedH, m.mcpReqs, m.stageH, m.auditDrop, m.traceLost, m.outputBad, m.stdioStarts, m.sessionEvictions, m.preAuth,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// latencyBuckets start at 50 µs: the gateway's own work is sub-millisecond
// and loopback backends answer in a few hundred µs, which Prometheus's
// default buckets (from 5 ms) cannot tell apart from zero.
var latencyBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10, 30}

// TrackStoreWait exports waited (how long start-up has been waiting for the
// registry store; 0 when not waiting) as flowdrop_registry_store_wait_seconds.
func (m *Metrics) TrackStoreWait(waited func() time.Duration) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flowdrop_registry_store_wait_seconds",
		Help: "How long start-up has been waiting for an unreachable registry store (0 once the registry is loaded)."},
		func() float64 { return waited().Seconds() }))
}

// Registry is the Prometheus registry the metrics live in (for /metrics).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// GRPC is the gRPC server metrics (interceptors and InitializeMetrics).
func (m *Metrics) GRPC() *grpcprom.ServerMetrics { return m.grpc }

// RecordCall observes the time the gateway added to the call and counts
// its repairs and, for a refused call, its policy denial or validation
// failure.
func (m *Metrics) RecordCall(_ context.Context, c *pipeline.Call, o pipeline.Outcome) {
	m.addedH.WithLabelValues(o.Label).Observe((o.Latency - o.BackendLatency).Seconds())
	if o.OutputInvalid {
		m.outputBad.WithLabelValues(o.Label).Inc()
	}
	for i, d := range c.StageTimes() {
		if i < len(m.stageObs) && d > 0 {
			m.stageObs[i].Observe(d.Seconds())
		}
	}
	for _, r := range c.Report.Repairs {
		m.repairs.WithLabelValues(o.Label, r.Kind.String()).Inc()
	}
	if o.Err == nil {
		return
	}
	m.errs.set(o.Label, o.Err.Message)
	switch o.Err.Kind {
	case pipeline.KindPolicy:
		m.denials.WithLabelValues(o.Label, string(o.Err.Reason)).Inc()
	case pipeline.KindValidation:
		m.invalid.WithLabelValues(o.Label).Inc()
	}
}

// RecordBackend observes a backend call's latency by tool and code.
func (m *Metrics) RecordBackend(tool, code string, d time.Duration) {
	m.backendH.WithLabelValues(tool, code).Observe(d.Seconds())
}

// WatchRegistryStaleness exports staleFor (seconds the registry snapshot may
// have been out of date; 0 when current) as flowdrop_registry_stale_seconds,
// read at each scrape.
func (m *Metrics) WatchRegistryStaleness(staleFor func() time.Duration) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flowdrop_registry_stale_seconds",
		Help: "Seconds since the registry snapshot was last known current (0: current). Non-zero while the store (etcd) is unreachable; tools are served from the snapshot meanwhile."},
		func() float64 { return staleFor().Seconds() }))
}

// WatchReady exports ready (what /readyz answers: true for 200) as
// flowdrop_ready, read at each scrape, so an alert can tell a replica that
// runs but gets no traffic.
func (m *Metrics) WatchReady(ready func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flowdrop_ready",
		Help: "1 while the replica is ready (/readyz answers 200), 0 while it is not: waiting for the registry store, the audit log not writable, or draining."},
		func() float64 {
			if ready() {
				return 1
			}
			return 0
		}))
}

// SetStages resolves the per-stage observers for the pipeline's stage
// names, in order (Pipeline.StageNames without "dispatch").
func (m *Metrics) SetStages(names []string) {
	m.stageObs = make([]prometheus.Observer, len(names))
	for i, n := range names {
		m.stageObs[i] = m.stageH.WithLabelValues(n)
	}
}

// CountMCP counts one MCP request (mcpapi.Config.CountRequest).
func (m *Metrics) CountMCP(method, outcome string) { m.mcpReqs.WithLabelValues(method, outcome).Inc() }

// CountGRPCPreAuth counts one gRPC stream ended before it was
// authenticated, for reason.
func (m *Metrics) CountGRPCPreAuth(reason string) { m.preAuth.WithLabelValues(reason).Inc() }

// CountAuditDropped counts one lost audit record.
func (m *Metrics) CountAuditDropped() { m.auditDrop.Inc() }

// CountTraceSpansLost counts spans an OTLP export failed to deliver.
func (m *Metrics) CountTraceSpansLost(n int) { m.traceLost.Add(float64(n)) }

// SetStdioServers starts each configured stdio server's start counts at
// 0, so a rate over them is defined before the first start.
func (m *Metrics) SetStdioServers(names []string) {
	for _, n := range names {
		m.stdioStarts.WithLabelValues(n, "ok")
		m.stdioStarts.WithLabelValues(n, "failed")
	}
}

// CountMCPSessionEviction counts one per-caller upstream MCP session
// closed by its bound (backend.EvictionCap or EvictionIdle).
func (m *Metrics) CountMCPSessionEviction(reason string) {
	m.sessionEvictions.WithLabelValues(reason).Inc()
}

// CountStdioStart counts one start of a stdio MCP server.
func (m *Metrics) CountStdioStart(server string, ok bool) {
	result := "failed"
	if ok {
		result = "ok"
	}
	m.stdioStarts.WithLabelValues(server, result).Inc()
}

var _ pipeline.Recorder = (*Metrics)(nil)
