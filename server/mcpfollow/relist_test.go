package mcpfollow

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// TestRelistPacer: notifications are debounced per upstream — the first
// is re-listed at once, a burst after a re-list is one trailing re-list
// once the gap has passed (a timer wakes the loop for it), a re-list for
// any other reason answers the notifications before it, one noisy
// upstream never delays another, and forgotten upstreams keep nothing.
func TestRelistPacer(t *testing.T) {
	t.Parallel()
	a := upstreamID{url: "http://127.0.0.1:1/mcp"}
	b := upstreamID{url: "http://127.0.0.1:2/mcp", ref: mcpupstream.Reference{Env: "KEY"}}
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name, reason string
		steps        func(p *relistPacer) []upstreamID // what due returns at the end
		want         []upstreamID
	}{
		{name: "first notification", reason: "an upstream never re-listed is due at once",
			steps: func(p *relistPacer) []upstreamID { p.notify(a); return p.due(t0) }, want: []upstreamID{a}},
		{name: "burst within the gap", reason: "a burst right after a re-list waits for the gap: none now",
			steps: func(p *relistPacer) []upstreamID {
				p.listed(a, t0)
				for range 100 {
					p.notify(a)
				}
				return p.due(t0.Add(10 * time.Millisecond))
			}},
		{name: "burst after the gap", reason: "the burst is one trailing re-list once the gap has passed",
			steps: func(p *relistPacer) []upstreamID {
				p.listed(a, t0)
				for range 100 {
					p.notify(a)
				}
				p.due(t0.Add(10 * time.Millisecond))
				if got := p.due(t0.Add(time.Second)); len(got) != 1 {
					t.Errorf("trailing re-list: %v, want [a] once", got)
				}
				return p.due(t0.Add(2 * time.Second)) // answered: nothing more
			}},
		{name: "listed answers", reason: "an interval re-list after a notification answers it",
			steps: func(p *relistPacer) []upstreamID { p.notify(a); p.listed(a, t0); return p.due(t0.Add(time.Hour)) }},
		{name: "independent upstreams", reason: "a noisy upstream within its gap does not hold back another",
			steps: func(p *relistPacer) []upstreamID {
				p.listed(a, t0)
				p.listed(b, t0.Add(-time.Hour))
				p.notify(a)
				p.notify(b)
				return p.due(t0.Add(time.Millisecond))
			}, want: []upstreamID{b}},
		{name: "forget", reason: "an upstream no tool uses is dropped with its mark",
			steps: func(p *relistPacer) []upstreamID {
				p.notify(a)
				p.notify(b)
				p.forget(map[upstreamID]bool{b: true})
				return p.due(t0)
			}, want: []upstreamID{b}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newRelistPacer(time.Second, func() {})
			defer p.stop()
			got := tc.steps(p)
			slices.SortFunc(got, func(x, y upstreamID) int { return cmpString(x.url, y.url) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("due %v, want %v (%s)", got, tc.want, tc.reason)
			}
		})
	}
}

func cmpString(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// TestRelistPacerWakesForTheTrailingRelist: an upstream held back by its
// gap is not forgotten — a timer wakes the loop when it is due, without
// another notification.
func TestRelistPacerWakesForTheTrailingRelist(t *testing.T) {
	t.Parallel()
	var wakes atomic.Int32
	woke := make(chan struct{}, 8)
	p := newRelistPacer(50*time.Millisecond, func() { wakes.Add(1); woke <- struct{}{} })
	defer p.stop()
	u := upstreamID{url: "http://127.0.0.1:1/mcp"}
	start := time.Now()
	p.listed(u, start)
	p.notify(u)
	<-woke // the notification's own wake
	if got := p.due(time.Now()); len(got) != 0 {
		t.Fatalf("due within the gap: %v", got)
	}
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for the trailing re-list")
	}
	if since := time.Since(start); since < 50*time.Millisecond {
		t.Errorf("woke after %v, before the gap", since)
	}
	if got := p.due(time.Now()); !slices.Equal(got, []upstreamID{u}) {
		t.Errorf("due after the wake: %v, want [%v]", got, u)
	}
}
