package observe

import "github.com/prometheus/client_golang/prometheus"

// RateLimitFallbackCounter registers flowdrop_ratelimit_fallback_total
// and returns what counts one call the fallback decided. Call it once.
func (m *Metrics) RateLimitFallbackCounter(modes ...string) func(mode string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_ratelimit_fallback_total",
		Help: "Rate-limit decisions made by the fallback (rate_limit.fallback: local or deny) because the shared store (Redis) could not decide."},
		[]string{"mode"})
	m.reg.MustRegister(c)
	for _, mode := range modes {
		c.WithLabelValues(mode) // exported at 0 before the first fallback
	}
	return func(mode string) { c.WithLabelValues(mode).Inc() }
}
