package mcpfollow

import (
	"sync"
	"time"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// relistGap is the least time between two re-lists of one upstream
// that its notifications ask for: an upstream sending list_changed in a
// loop costs the gateway at most one tools/list a second, and no other
// upstream is re-listed for it.
const relistGap = time.Second

// upstreamID is one upstream as its notifications name it: its URL and
// credential reference (a stdio server: its stdio://NAME alone).
type upstreamID struct {
	url string
	ref mcpupstream.Reference
}

// relistPacer debounces notifications per upstream: a notification marks
// its upstream; a marked upstream is re-listed once relistGap has passed
// since its last re-list (at once when it has), so a burst is one re-list
// now and one trailing re-list for the changes after it — the last change
// is always seen.
type relistPacer struct {
	gap  time.Duration
	wake func() // asks the follower's loop to call due

	mu      sync.Mutex
	last    map[upstreamID]time.Time // when each upstream was last re-listed
	marked  map[upstreamID]bool      // notified since its last re-list
	timerAt time.Time                // when the armed timer fires (zero: none)
	timer   *time.Timer
}

func newRelistPacer(gap time.Duration, wake func()) *relistPacer {
	return &relistPacer{gap: gap, wake: wake, last: map[upstreamID]time.Time{}, marked: map[upstreamID]bool{}}
}

// notify marks u and wakes the loop: O(1), whatever the rate.
func (p *relistPacer) notify(u upstreamID) {
	p.mu.Lock()
	p.marked[u] = true
	p.mu.Unlock()
	p.wake()
}

// due unmarks and returns the marked upstreams whose gap has passed; for
// the others a timer wakes the loop when the first of them is due.
func (p *relistPacer) due(now time.Time) []upstreamID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ready []upstreamID
	var next time.Time
	for u := range p.marked {
		at := p.last[u].Add(p.gap)
		if !at.After(now) {
			ready = append(ready, u)
			delete(p.marked, u)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() && (p.timerAt.IsZero() || next.Before(p.timerAt) || !p.timerAt.After(now)) {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timerAt = next
		p.timer = time.AfterFunc(next.Sub(now), p.wake)
	}
	return ready
}

// listed records a re-list of u at now (whatever asked for it), which
// also answers its notifications so far.
func (p *relistPacer) listed(u upstreamID, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[u] = now
	delete(p.marked, u)
}

// forget drops what is kept for upstreams not in keep (no tool uses them).
func (p *relistPacer) forget(keep map[upstreamID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for u := range p.last {
		if !keep[u] {
			delete(p.last, u)
		}
	}
	for u := range p.marked {
		if !keep[u] {
			delete(p.marked, u)
		}
	}
}

// stop ends the timer.
func (p *relistPacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
}
