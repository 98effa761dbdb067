package observe

import "github.com/prometheus/client_golang/prometheus"

// BackendEjections is one tool's outlier ejections (server/backend
// eject.go): all so far on the connection serving it, and its addresses
// ejected now.
type BackendEjections struct {
	Tool    string
	Total   uint64
	Ejected int
}

var (
	ejectionsDesc = prometheus.NewDesc("flowdrop_backend_ejections_total",
		"Outlier ejections of a balanced backend's addresses (calls failing Unavailable in a row), by tool; tools sharing a backend target share the count.",
		[]string{"tool"}, nil)
	ejectedDesc = prometheus.NewDesc("flowdrop_backend_ejected_addresses",
		"Addresses of a tool's balanced backend ejected now, by tool. The addresses themselves are in the gateway's log.",
		[]string{"tool"}, nil)
)

// TrackBackendEjections exports what list returns at each scrape: one
// series per tool with a balanced backend connection open (labels are
// registered tool names only: bounded; never an address).
func (m *Metrics) TrackBackendEjections(list func(yield func(BackendEjections) bool)) {
	m.reg.MustRegister(ejectionCollector(list))
}

type ejectionCollector func(yield func(BackendEjections) bool)

func (ejectionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ejectionsDesc
	ch <- ejectedDesc
}

func (c ejectionCollector) Collect(ch chan<- prometheus.Metric) {
	for e := range c {
		ch <- prometheus.MustNewConstMetric(ejectionsDesc, prometheus.CounterValue, float64(e.Total), e.Tool)
		ch <- prometheus.MustNewConstMetric(ejectedDesc, prometheus.GaugeValue, float64(e.Ejected), e.Tool)
	}
}
