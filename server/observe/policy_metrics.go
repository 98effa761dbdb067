package observe

import (
	"github.com/prometheus/client_golang/prometheus"
)

// PolicyMetrics are the policy's own metrics: reloads and the policy in
// force.
type PolicyMetrics struct {
	reloads *prometheus.CounterVec
	info    *prometheus.GaugeVec
}

// Reload results (flowdrop_policy_reload_total's result label).
const (
	ReloadOK    = "ok"
	ReloadError = "error"
)

// NewPolicyMetrics registers the policy metrics in m's registry.
func NewPolicyMetrics(m *Metrics) *PolicyMetrics {
	p := &PolicyMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_policy_reload_total",
			Help: "Policy reloads (SIGHUP, file watch, Gateway.ReloadPolicy) by result: ok (swapped in) or error (refused; the policy in force is unchanged)."}, []string{"result"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flowdrop_policy_info",
			Help: "The policy in force: 1 for the SHA-256 of its file (of its JSON form when built in Go)."}, []string{"sha256"}),
	}
	// Both results exist from the start, so a rate() over them has a zero.
	p.reloads.WithLabelValues(ReloadOK)
	p.reloads.WithLabelValues(ReloadError)
	m.reg.MustRegister(p.reloads, p.info)
	return p
}

// CountReload counts one reload by result (ReloadOK or ReloadError).
func (p *PolicyMetrics) CountReload(result string) { p.reloads.WithLabelValues(result).Inc() }

// SetPolicy makes sha256 the policy in force.
func (p *PolicyMetrics) SetPolicy(sha256 string) {
	p.info.Reset()
	p.info.WithLabelValues(sha256).Set(1)
}
