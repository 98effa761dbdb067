package redisstate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

// TestSessionSubs: the face sessions' subscriptions on a real
// redis-server, as two replicas see them: one adds, the other lists; the
// bound per session; the holder a claim records; expiry when idle; the
// announcement of a change reaching the other replica.
func TestSessionSubs(t *testing.T) {
	rs := redistest.Start(t)
	open := func() *redisstate.SessionSubs {
		c, err := redisstate.Open(redisstate.Config{Addr: rs.Addr(), Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.SessionSubs("test:subs:")
	}
	a, b := open(), open()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	heard := make(chan string, 8)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.Serve(sctx, func(s string) { heard <- s }) }()
	defer func() { stop(); <-done }()

	rows := []struct {
		reason  string
		uri     string
		wantErr error
	}{
		{"a first URI", "u1", nil},
		{"a second URI, at the bound of 2", "u2", nil},
		{"one held already is no new subscription", "u1", nil},
		{"a third is over the bound", "u3", redisstate.ErrSessionSubsLimit},
	}
	for _, row := range rows {
		if err := a.Add(ctx, "s1", row.uri, 2, time.Minute); !errors.Is(err, row.wantErr) {
			t.Fatalf("Add %s: %v, want %v (%s)", row.uri, err, row.wantErr, row.reason)
		}
	}
	if err := a.Claim(ctx, "s1", "stream-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	uris, holder, err := b.List(ctx, "s1", time.Minute)
	slices.Sort(uris)
	if err != nil || !slices.Equal(uris, []string{"u1", "u2"}) || holder != "stream-1" {
		t.Fatalf("the other replica lists %v held by %q (%v); want [u1 u2] held by stream-1", uris, holder, err)
	}
	if err := a.Remove(ctx, "s1", "u1"); err != nil {
		t.Fatal(err)
	}
	if uris, _, _ := b.List(ctx, "s1", time.Minute); !slices.Equal(uris, []string{"u2"}) {
		t.Fatalf("after Remove: %v, want [u2]", uris)
	}
	// The claim's announcement reaches b once its subscription is up: a
	// Notify repeated until heard.
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		_ = a.Notify(ctx, "s1")
		select {
		case s := <-heard:
			if s != "s1" {
				t.Fatalf("heard %q, want s1", s)
			}
			got = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the other replica never heard the session's change")
		}
	}
	// Idle: gone once the expiry passes with no touch.
	if err := a.Add(ctx, "s2", "u", 2, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if uris, _, _ := b.List(ctx, "s2", time.Minute); len(uris) != 0 {
		t.Fatalf("an idle session's subscriptions outlived their expiry: %v", uris)
	}
}
