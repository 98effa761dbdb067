package observe

import "github.com/prometheus/client_golang/prometheus"

// MCPUpstreamMetrics are the upstream MCP follower's metrics.
type MCPUpstreamMetrics struct {
	oversized *prometheus.CounterVec
}

// The bounds an upstream tool can be over (mcpimport.Oversized.Bound).
var mcpUpstreamBounds = []string{"description", "input_schema", "output_schema"}

// NewMCPUpstreamMetrics registers the follower's metrics on m.
func NewMCPUpstreamMetrics(m *Metrics) *MCPUpstreamMetrics {
	u := &MCPUpstreamMetrics{
		oversized: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_mcp_upstream_tools_oversized_total",
			Help: "Followed upstream MCP tools whose listing was over a bound (mcp_upstreams.max_description_bytes, max_schema_bytes), by bound: kept at their registered revision, counted once per size."}, []string{"bound"}),
	}
	for _, b := range mcpUpstreamBounds { // from the start, so a rate() has a zero
		u.oversized.WithLabelValues(b)
	}
	m.reg.MustRegister(u.oversized)
	return u
}

// CountOversized counts one upstream tool over bound.
func (u *MCPUpstreamMetrics) CountOversized(bound string) { u.oversized.WithLabelValues(bound).Inc() }
