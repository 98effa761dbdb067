package pipeline

import (
	"context"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Progress is one progress report of a running call, as an upstream sent
// it: Total 0 is unknown, Message "" none.
type Progress struct {
	Progress, Total float64
	Message         string
}

// Bounds on what a call relays of its backend's progress: a hostile
// upstream's flood costs the caller at most ProgressMaxPerCall small
// messages, ProgressBurst at once and then one per ProgressInterval.
const (
	ProgressMaxPerCall = 64
	ProgressBurst      = 8
	ProgressInterval   = 50 * time.Millisecond
	ProgressMaxMessage = 1 << 10
)

// ProgressSink takes a call's progress reports for its caller. A face puts
// one in a call's context only when its caller asked for progress; a
// backend that can learn its upstream's progress reports it. Report is
// safe for concurrent use and drops what is over the bounds, repeats no
// progress value (progress must increase) and ends at Close.
type ProgressSink struct {
	mu     sync.Mutex
	emit   func(Progress)
	rate   *rate.Limiter
	now    func() time.Time // time.Now; a test's fixed clock
	sent   int
	prev   float64
	closed bool
}

// NewProgressSink is a sink that hands each report within the bounds to
// emit, under the sink's lock (so never after Close returns).
func NewProgressSink(emit func(Progress)) *ProgressSink {
	return &ProgressSink{emit: emit, rate: rate.NewLimiter(rate.Every(ProgressInterval), ProgressBurst), now: time.Now, prev: math.Inf(-1)}
}

// Report relays p if it is within the bounds, reporting whether it did.
func (s *ProgressSink) Report(p Progress) bool {
	if s == nil || math.IsNaN(p.Progress) || math.IsInf(p.Progress, 0) || math.IsNaN(p.Total) || math.IsInf(p.Total, 0) || p.Total < 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.sent >= ProgressMaxPerCall || p.Progress <= s.prev || !s.rate.AllowN(s.now(), 1) {
		return false
	}
	p.Message = truncateUTF8(p.Message, ProgressMaxMessage)
	s.sent++
	s.prev = p.Progress
	s.emit(p)
	return true
}

// Close ends the sink: the call's answer follows, and no report after it.
func (s *ProgressSink) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// truncateUTF8 is s cut to at most max bytes at a rune boundary.
func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

type progressKey struct{}

// WithProgress is ctx carrying the call's progress sink.
func WithProgress(ctx context.Context, s *ProgressSink) context.Context {
	return context.WithValue(ctx, progressKey{}, s)
}

// ProgressFrom is the call's progress sink, or nil: its caller asked for none.
func ProgressFrom(ctx context.Context) *ProgressSink {
	s, _ := ctx.Value(progressKey{}).(*ProgressSink)
	return s
}
