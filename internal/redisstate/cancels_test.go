package redisstate_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

// replica is one replica's side of Cancels: the calls it holds by key,
// and the keys it was told to cancel.
type replica struct {
	c         *redisstate.Cancels
	mu        sync.Mutex
	calls     map[string]int
	cancelled []string
}

func (r *replica) held(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

func (r *replica) cancel(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls[key] != 1 {
		return false
	}
	r.cancelled = append(r.cancelled, key)
	return true
}

func (r *replica) cancelledKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cancelled...)
}

// startFleet serves n replicas on one real redis-server and waits until
// each is subscribed (a lookup from each finds every other).
func startFleet(t *testing.T, rs *redistest.Server, n int) []*replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	out := make([]*replica, n)
	for i := range out {
		c, err := redisstate.Open(redisstate.Config{Addr: rs.Addr(), Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := &replica{c: c.Cancels("test:cancel:"), calls: map[string]int{}}
		out[i] = r
		wg.Add(1)
		go func() { defer wg.Done(); r.c.Serve(ctx, r.held, r.cancel) }()
	}
	// Each replica holds a call of its own that replica 0 must find.
	deadline := time.Now().Add(10 * time.Second)
	for i, r := range out {
		key := "warm-up-" + strconv.Itoa(i)
		r.mu.Lock()
		r.calls[key] = 1
		r.mu.Unlock()
		for {
			here, elsewhere, err := out[0].c.Cancel(ctx, key, out[0].held(key), time.Second)
			if err == nil && (here && i == 0 || elsewhere && i > 0) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never answered: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return out
}

// TestCancelsFleet: a cancellation asked of one replica ends the call
// only when exactly one call in the whole fleet holds the key, on the
// replica that holds it.
func TestCancelsFleet(t *testing.T) {
	rs := redistest.Start(t)
	fleet := startFleet(t, rs, 3)
	ctx := context.Background()
	rows := []struct {
		name, reason string
		calls        [3]int // held under the key by replicas 0, 1, 2
		wantHere     bool   // replica 0, asked, holds the one call
		wantOn       int    // the replica told to cancel (-1: none)
	}{
		{"elsewhere", "the one call is on another replica: that one is told", [3]int{0, 1, 0}, false, 1},
		{"here", "the one call is the asking replica's own: it ends it", [3]int{1, 0, 0}, true, -1},
		{"none", "no call holds the key: nothing", [3]int{0, 0, 0}, false, -1},
		{"two replicas", "one call on each of two replicas: ambiguous, neither", [3]int{0, 1, 1}, false, -1},
		{"here and elsewhere", "one here and one elsewhere: ambiguous, neither", [3]int{1, 0, 1}, false, -1},
		{"two on one", "two calls on one other replica: ambiguous, neither", [3]int{0, 0, 2}, false, -1},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			key := `["alice","api-key","` + row.name + `"]`
			for i, r := range fleet {
				r.mu.Lock()
				r.calls[key] = row.calls[i]
				r.mu.Unlock()
			}
			here, elsewhere, err := fleet[0].c.Cancel(ctx, key, row.calls[0], 5*time.Second)
			if err != nil {
				t.Fatalf("Cancel: %v (%s)", err, row.reason)
			}
			if here != row.wantHere || elsewhere != (row.wantOn >= 0) {
				t.Fatalf("Cancel = here %v, elsewhere %v; want %v, %v (%s)", here, elsewhere, row.wantHere, row.wantOn >= 0, row.reason)
			}
			if row.wantOn >= 0 {
				// The cancel message is on its way after Cancel returns.
				deadline := time.Now().Add(5 * time.Second)
				for !slices.Contains(fleet[row.wantOn].cancelledKeys(), key) {
					if time.Now().After(deadline) {
						t.Fatalf("replica %d was never told to cancel (%s)", row.wantOn, row.reason)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			for i, r := range fleet {
				if i != row.wantOn && slices.Contains(r.cancelledKeys(), key) {
					t.Fatalf("replica %d was told to cancel; want only %d (%s)", i, row.wantOn, row.reason)
				}
			}
		})
	}
	t.Run("key bound", func(t *testing.T) {
		if _, _, err := fleet[0].c.Cancel(ctx, strings.Repeat("k", redisstate.MaxCancelKeyBytes+1), 0, time.Second); err == nil {
			t.Fatal("a key over the bound was carried")
		}
	})
	t.Run("redis down", func(t *testing.T) {
		rs.Stop()
		_, _, err := fleet[0].c.Cancel(ctx, "k", 0, time.Second)
		if !errors.Is(err, redisstate.ErrCancelUnknown) {
			t.Fatalf("Cancel with Redis down: %v; want ErrCancelUnknown", err)
		}
	})
}
