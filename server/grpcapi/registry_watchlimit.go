package grpcapi

import (
	"context"
	"fmt"
	"sync"

	"github.com/flowdrop/gateway/internal/policy"
)

// Default bounds on open WatchTools streams. Each stream holds a store
// watch, a goroutine and a send buffer for as long as its client keeps it
// open, and opening one costs a full listing of the registry: without a
// bound one caller could hold the gateway's memory and the store's watch
// capacity by opening streams and never reading them.
const (
	DefaultWatchStreamsPerCaller = 8
	DefaultWatchStreams          = 256
)

// WatchLimits bound the WatchTools streams open at once: per caller
// (subject and authentication method, as rate limits key callers) and in
// total. Zero takes the default; a stream over either is refused
// ResourceExhausted before it lists or watches anything.
type WatchLimits struct {
	PerCaller, Total int
}

// WithWatchLimits sets the WatchTools stream bounds (without it, the
// defaults).
func WithWatchLimits(l WatchLimits) registryServiceOption {
	return func(s *registryService) { s.watches = newWatchSlots(l) }
}

// watchSlots counts the open WatchTools streams, by caller and in total.
type watchSlots struct {
	perCaller, total int

	mu   sync.Mutex
	open int
	by   map[watchCaller]int // only callers with a stream open: bounded by total
}

type watchCaller struct{ method, subject string }

func newWatchSlots(l WatchLimits) *watchSlots {
	if l.PerCaller <= 0 {
		l.PerCaller = DefaultWatchStreamsPerCaller
	}
	if l.Total <= 0 {
		l.Total = DefaultWatchStreams
	}
	return &watchSlots{perCaller: l.PerCaller, total: l.Total, by: map[watchCaller]int{}}
}

// acquire takes a slot for the caller in ctx, or refuses the stream
// (a *policy.Error: ResourceExhausted, limit-in-flight, naming the bound).
// A stream without an authenticated caller (no interceptor put one there)
// counts as one anonymous caller. release gives the slot back, once.
func (w *watchSlots) acquire(ctx context.Context) (release func(), err error) {
	c, _ := policy.CallerFrom(ctx)
	k := watchCaller{c.Method, c.Subject}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.by[k] >= w.perCaller:
		return nil, &policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonLimitInFlight, Limit: "watch_streams_per_caller",
			Message: fmt.Sprintf("caller %q already has %d WatchTools streams open, the most one caller may; close one first", policy.Bound(c.Subject), w.perCaller)}
	case w.open >= w.total:
		return nil, &policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonLimitInFlight, Limit: "watch_streams",
			Message: fmt.Sprintf("the gateway already serves %d WatchTools streams, the most it serves at once; retry later", w.total)}
	}
	w.by[k]++
	w.open++
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.open--
			if w.by[k]--; w.by[k] == 0 {
				delete(w.by, k)
			}
		})
	}, nil
}
