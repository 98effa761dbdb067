package mcpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSessionStreamQueueOverflow: a stream whose client does not take
// what it is sent is closed once sessionStreamQueue messages wait, not
// grown and not blocked on.
func TestSessionStreamQueueOverflow(t *testing.T) {
	st := &sessionStream{q: make(chan []byte, sessionStreamQueue), closed: make(chan struct{})}
	for range sessionStreamQueue {
		st.send([]byte("{}"))
	}
	select {
	case <-st.closed:
		t.Fatalf("closed at %d messages waiting, within the bound", sessionStreamQueue)
	default:
	}
	st.send([]byte("{}"))
	select {
	case <-st.closed:
	default:
		t.Fatal("a message over the queue's bound did not close the stream")
	}
}

// TestMemorySessionSubscriptions: the in-memory store's bounds and expiry.
func TestMemorySessionSubscriptions(t *testing.T) {
	ctx := context.Background()
	rows := []struct {
		reason  string
		prepare func(s SessionSubscriptions)
		session string
		uri     string
		max     int
		wantErr error
	}{
		{"a first URI is admitted", func(SessionSubscriptions) {}, "s1", "u", 2, nil},
		{"a URI held already is no new subscription at the bound", func(s SessionSubscriptions) {
			_ = s.Add(ctx, "s1", "u", 1, time.Hour)
		}, "s1", "u", 1, nil},
		{"over the session's bound", func(s SessionSubscriptions) {
			_ = s.Add(ctx, "s1", "a", 2, time.Hour)
			_ = s.Add(ctx, "s1", "b", 2, time.Hour)
		}, "s1", "c", 2, ErrSessionSubscriptionLimit},
		{"another session has a bound of its own", func(s SessionSubscriptions) {
			_ = s.Add(ctx, "s1", "a", 1, time.Hour)
		}, "s2", "a", 1, nil},
		{"an expired session's URIs no longer count", func(s SessionSubscriptions) {
			_ = s.Add(ctx, "s1", "a", 1, time.Nanosecond)
			time.Sleep(time.Millisecond)
		}, "s1", "b", 1, nil},
		{"over the store's bound of subscriptions in all", func(s SessionSubscriptions) {
			for i := range maxMemorySessionSubs {
				_ = s.Add(ctx, fmt.Sprintf("s%d", i), "a", 1, time.Hour)
			}
		}, "last", "a", 1, ErrSessionSubscriptionLimit},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			s := NewMemorySessionSubscriptions()
			row.prepare(s)
			if err := s.Add(ctx, row.session, row.uri, row.max, time.Hour); !errors.Is(err, row.wantErr) {
				t.Fatalf("Add: %v, want %v (%s)", err, row.wantErr, row.reason)
			}
		})
	}
	t.Run("a claim is the holder List reports, and is announced", func(t *testing.T) {
		s := NewMemorySessionSubscriptions()
		if err := s.Claim(ctx, "s1", "stream-1", time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, holder, _ := s.List(ctx, "s1", time.Hour); holder != "stream-1" {
			t.Fatalf("holder %q, want stream-1", holder)
		}
		got := make(chan string, 1)
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.Serve(sctx, func(k string) { got <- k; cancel() })
		if k := <-got; k != "s1" {
			t.Fatalf("announced %q, want s1", k)
		}
	})
}
