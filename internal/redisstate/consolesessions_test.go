package redisstate_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

// TestConsoleSessions: a session is found under the policy it logged in
// with until it ends — logged out, looked up under another policy, its
// policy retired, past its lifetime — and a login past the bound ends the
// least recently used, on one Redis and on a Cluster (the scripts' keys
// share a slot).
func TestConsoleSessions(t *testing.T) {
	const ns = "test:{console}:"
	limits := redisstate.ConsoleSessionLimits{Max: 3, Idle: time.Hour, Lifetime: 4 * time.Hour}
	t0 := time.Now()
	ctx := context.Background()
	for _, d := range []struct {
		name    string
		connect func(t *testing.T) redisstate.Config
	}{
		{"single", func(t *testing.T) redisstate.Config { return redisstate.Config{Addr: redistest.Start(t).Addr()} }},
		{"cluster", func(t *testing.T) redisstate.Config {
			return redisstate.Config{Addr: redistest.StartCluster(t).Addrs(), Mode: redisstate.ModeCluster}
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			cfg := d.connect(t)
			cfg.Timeout = time.Second
			c, err := redisstate.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := 0
			// fresh is a new store (its own namespace) holding one session "k"
			// logged in under "h1" at t0.
			fresh := func(t *testing.T) *redisstate.ConsoleSessions {
				n++
				s := c.ConsoleSessions("test"+strconv.Itoa(n)+":{console}:", limits)
				if err := s.Create(ctx, "k", []byte("payload"), "h1", t0); err != nil {
					t.Fatal(err)
				}
				return s
			}
			found := func(t *testing.T, s *redisstate.ConsoleSessions, key, hash string, at time.Time) bool {
				t.Helper()
				p, ok, err := s.Lookup(ctx, key, hash, at)
				if err != nil {
					t.Fatal(err)
				}
				if ok && string(p) != "payload" {
					t.Fatalf("payload %q", p)
				}
				return ok
			}
			for _, row := range []struct {
				name, reason string
				do           func(*redisstate.ConsoleSessions) error
				hash         string
				at           time.Duration
				alive        bool
			}{
				{"live", "logged in under the policy in force", nil, "h1", time.Minute, true},
				{"end", "logged out (on any replica)", func(s *redisstate.ConsoleSessions) error { return s.End(ctx, "k") }, "h1", time.Minute, false},
				{"other policy", "the asking replica has another policy in force", nil, "h2", time.Minute, false},
				{"retired", "its policy left force on some replica", func(s *redisstate.ConsoleSessions) error { return s.Retire(ctx, "h1") }, "h1", time.Minute, false},
				{"other retired", "another policy retired", func(s *redisstate.ConsoleSessions) error { return s.Retire(ctx, "h0") }, "h1", time.Minute, true},
				{"lifetime", "past the absolute lifetime", nil, "h1", limits.Lifetime, false},
			} {
				t.Run(row.name, func(t *testing.T) {
					s := fresh(t)
					if row.do != nil {
						if err := row.do(s); err != nil {
							t.Fatal(err)
						}
					}
					if got := found(t, s, "k", row.hash, t0.Add(row.at)); got != row.alive {
						t.Errorf("found = %t, want %t (%s)", got, row.alive, row.reason)
					}
					if !row.alive && found(t, s, "k", "h1", t0.Add(2*time.Minute)) {
						t.Errorf("the ended session is found again under its own policy (%s)", row.reason)
					}
				})
			}
			t.Run("retired then new", func(t *testing.T) {
				s := fresh(t)
				if err := s.Retire(ctx, "h1"); err != nil {
					t.Fatal(err)
				}
				// A rollback to h1: sessions logged in from now on hold.
				if err := s.Create(ctx, "k2", []byte("payload"), "h1", t0); err != nil {
					t.Fatal(err)
				}
				if found(t, s, "k", "h1", t0) || !found(t, s, "k2", "h1", t0) {
					t.Error("want the session from before the retirement ended, the one after live")
				}
			})
			t.Run("bounded", func(t *testing.T) {
				s := fresh(t) // "k" at t0
				for i, k := range []string{"a", "b"} {
					if err := s.Create(ctx, k, []byte("payload"), "h1", t0.Add(time.Duration(i+1)*time.Second)); err != nil {
						t.Fatal(err)
					}
				}
				// k is used now: a is the least recently used.
				if !found(t, s, "k", "h1", t0.Add(time.Minute)) {
					t.Fatal("k is not live")
				}
				if err := s.Create(ctx, "c", []byte("payload"), "h1", t0.Add(2*time.Minute)); err != nil {
					t.Fatal(err)
				}
				for k, want := range map[string]bool{"k": true, "a": false, "b": true, "c": true} {
					if got := found(t, s, k, "h1", t0.Add(3*time.Minute)); got != want {
						t.Errorf("session %s live = %t, want %t (a login past the bound ends only the least recently used)", k, got, want)
					}
				}
			})
			t.Run("ttl", func(t *testing.T) {
				s := fresh(t)
				rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: cfg.Addrs(), IsClusterMode: cfg.Mode == redisstate.ModeCluster})
				defer rdb.Close()
				key := "test" + strconv.Itoa(n) + ":{console}:s:k"
				if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > limits.Idle {
					t.Errorf("TTL after login %v, want the idle bound %v", ttl, limits.Idle)
				}
				// Used 30 minutes before the lifetime ends: the TTL stops there.
				if !found(t, s, "k", "h1", t0.Add(limits.Lifetime-30*time.Minute)) {
					t.Fatal("not live")
				}
				if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 30*time.Minute {
					t.Errorf("TTL near the lifetime's end %v, want at most the 30 minutes left", ttl)
				}
			})
		})
	}
	t.Run("redis down", func(t *testing.T) {
		rs := redistest.Start(t)
		c, err := redisstate.Open(redisstate.Config{Addr: rs.Addr(), Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := c.ConsoleSessions(ns, limits)
		if err := s.Create(ctx, "k", []byte("p"), "h1", t0); err != nil {
			t.Fatal(err)
		}
		rs.Stop()
		if _, ok, err := s.Lookup(ctx, "k", "h1", t0); err == nil || ok {
			t.Errorf("lookup with Redis stopped: ok %t err %v, want an error", ok, err)
		}
		for name, f := range map[string]func() error{
			"create": func() error { return s.Create(ctx, "k2", []byte("p"), "h1", t0) },
			"end":    func() error { return s.End(ctx, "k") },
			"retire": func() error { return s.Retire(ctx, "h1") },
		} {
			if err := f(); err == nil {
				t.Errorf("%s with Redis stopped: no error", name)
			}
		}
	})
}
