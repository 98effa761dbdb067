package server

import (
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the gateway's Prometheus metrics, in a registry the Server
// owns (not the global default), so tests can run several gateways.
//
// Label values are bounded: tool is a registered tool's name or "_unknown"
// (a model can send any tool name), reason a policy Reason, kind a repair kind.
type metrics struct {
	reg      *prometheus.Registry
	grpc     *grpcprom.ServerMetrics
	repairs  *prometheus.CounterVec
	invalid  *prometheus.CounterVec
	denials  *prometheus.CounterVec
	backendH *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg:  prometheus.NewRegistry(),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram()),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_repairs_total",
			Help: "Argument repairs made by RT-TOOL-8 normalization, by tool and repair kind."}, []string{"tool", "kind"}),
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_validation_failures_total",
			Help: "Calls whose normalized arguments failed the tool's schema."}, []string{"tool"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_policy_denials_total",
			Help: "Calls refused by policy (authentication, authorization, rules, limits), by tool and reason."}, []string{"tool", "reason"}),
		backendH: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowdrop_backend_latency_seconds",
			Help:    "Latency of backend calls, by tool and gRPC status code.",
			Buckets: prometheus.DefBuckets}, []string{"tool", "code"}),
	}
	m.reg.MustRegister(m.grpc, m.repairs, m.invalid, m.denials, m.backendH,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// The recorders accept a nil *metrics (a pipeline built without a Server).

func (m *metrics) repair(tool, kind string) {
	if m != nil {
		m.repairs.WithLabelValues(tool, kind).Inc()
	}
}

func (m *metrics) validationFailure(tool string) {
	if m != nil {
		m.invalid.WithLabelValues(tool).Inc()
	}
}

func (m *metrics) policyDenial(tool, reason string) {
	if m != nil {
		m.denials.WithLabelValues(tool, reason).Inc()
	}
}

func (m *metrics) observeBackend(tool, code string, d time.Duration) {
	if m != nil {
		m.backendH.WithLabelValues(tool, code).Observe(d.Seconds())
	}
}
