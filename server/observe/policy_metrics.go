package observe

import (
	"context"
	"time"

	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/prometheus/client_golang/prometheus"
)

// PolicyMetrics are the policy's own metrics: reloads, the policy in
// force, and shadow denials (what shadow-mode entries would have refused).
// It is a pipeline Recorder for the shadow denials.
type PolicyMetrics struct {
	reloads *prometheus.CounterVec
	info    *prometheus.GaugeVec
	shadow  *prometheus.CounterVec
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
			Help: "The policy in force: 1 for the SHA-256 of its file (of its printed form when built in Go)."}, []string{"sha256"}),
		shadow: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_policy_shadow_denials_total",
			Help: "Refusals shadow-mode rules and authz entries would have made (the calls proceeded), by tool and reason."}, []string{"tool", "reason"}),
	}
	// Both results exist from the start, so a rate() over them has a zero.
	p.reloads.WithLabelValues(ReloadOK)
	p.reloads.WithLabelValues(ReloadError)
	m.reg.MustRegister(p.reloads, p.info, p.shadow)
	return p
}

// CountReload counts one reload by result (ReloadOK or ReloadError).
func (p *PolicyMetrics) CountReload(result string) { p.reloads.WithLabelValues(result).Inc() }

// SetPolicy makes sha256 the policy in force.
func (p *PolicyMetrics) SetPolicy(sha256 string) {
	p.info.Reset()
	p.info.WithLabelValues(sha256).Set(1)
}

// RecordCall counts the call's shadow denials (nothing without any).
func (p *PolicyMetrics) RecordCall(_ context.Context, c *pipeline.Call, o pipeline.Outcome) {
	for _, d := range c.ShadowDenials() {
		p.shadow.WithLabelValues(o.Label, d.Reason).Inc()
	}
}

// RecordBackend is a no-op.
func (p *PolicyMetrics) RecordBackend(string, string, time.Duration) {}

var _ pipeline.Recorder = (*PolicyMetrics)(nil)
