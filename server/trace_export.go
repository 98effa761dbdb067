package server

import (
	"sync"
	"time"
)

// traceExportReportEvery bounds the log lines of a failing OTLP exporter:
// the first failure is logged at once, later ones at most this often, with
// how many went unreported in between.
const traceExportReportEvery = time.Minute

// traceExportReport counts spans an OTLP export lost and logs the
// failure, rate-limited (a collector down for an hour is a few dozen lines,
// not one per batch).
type traceExportReport struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

func (g *Gateway) traceExportFailed(err error, spans int) {
	g.metrics.CountTraceSpansLost(spans)
	r := &g.traceReport
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < traceExportReportEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	g.log.Warn("trace export to the OTLP collector failed; spans are lost", "error", err.Error(),
		"spans", spans, "failures_not_logged_since_last", suppressed)
}
