package observe

import (
	"github.com/prometheus/client_golang/prometheus"
)

// pendingChanges is flowdrop_mcp_pending_changes, read from the registry
// at each scrape: the held changes live in the registry store, so every
// replica reports the same and an approval on any replica shows at once.
type pendingChanges struct {
	desc  *prometheus.Desc
	count func() map[string]int
}

func (c *pendingChanges) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingChanges) Collect(ch chan<- prometheus.Metric) {
	for upstream, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), upstream)
	}
}

// WatchPendingChanges exports count (imported tools with an upstream
// change awaiting approval, by upstream) as flowdrop_mcp_pending_changes.
func (m *Metrics) WatchPendingChanges(count func() map[string]int) {
	m.reg.MustRegister(&pendingChanges{count: count, desc: prometheus.NewDesc("flowdrop_mcp_pending_changes",
		"Imported tools whose upstream MCP server changed or dropped them, the change held for an admin's approval (flowdropctl tools pending), by upstream (its URL without query).",
		[]string{"upstream"}, nil)})
}
