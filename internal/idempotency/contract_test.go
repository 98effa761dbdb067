package idempotency_test

// One contract, every store: the same table runs against Memory, Bolt (a
// real file) and Redis (a real redis-server from PATH).

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/idempotency"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

type storeKind struct {
	name string
	// open starts what the kind needs once (a server) and returns the
	// constructor of one row's store: a fresh one, or a fresh namespace of
	// the kind's server.
	open func(t *testing.T) func(t *testing.T) idempotency.Store
}

// redisKind is a Redis deployment as a store kind: connect reaches it.
func redisKind(name string, connect func(t *testing.T) redisstate.Config) storeKind {
	return storeKind{name, func(t *testing.T) func(*testing.T) idempotency.Store {
		cfg := connect(t)
		cfg.Timeout = time.Second
		c, err := redisstate.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return func(t *testing.T) idempotency.Store { return c.Idempotency("test:idem:" + t.Name() + ":") }
	}}
}

func storeKinds() []storeKind {
	return []storeKind{
		{"memory", func(*testing.T) func(*testing.T) idempotency.Store {
			return func(*testing.T) idempotency.Store { return idempotency.NewMemory(0) }
		}},
		{"bolt", func(*testing.T) func(*testing.T) idempotency.Store {
			return func(t *testing.T) idempotency.Store {
				s, err := idempotency.OpenBolt(filepath.Join(t.TempDir(), "idempotency.db"), 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		redisKind("redis", func(t *testing.T) redisstate.Config {
			return redisstate.Config{Addr: redistest.Start(t).Addr()}
		}),
		redisKind("redis-cluster", func(t *testing.T) redisstate.Config {
			return redisstate.Config{Addr: redistest.StartCluster(t).Addrs(), Mode: redisstate.ModeCluster}
		}),
		redisKind("redis-sentinel", func(t *testing.T) redisstate.Config {
			return redisstate.Config{Addr: redistest.StartSentinel(t).Addrs(), Mode: redisstate.ModeSentinel,
				SentinelMaster: redistest.MasterName}
		}),
	}
}

var (
	hashA = idempotency.Hash{1}
	hashB = idempotency.Hash{2}
	tokA  = idempotency.Token{1}
	tokB  = idempotency.Token{2}
)

const (
	long  = time.Hour
	short = 50 * time.Millisecond
)

// eventually polls cond for up to a bound (a guard, not a speed claim).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	type step func(t *testing.T, s idempotency.Store)
	cases := []struct {
		name   string
		reason string
		run    step
	}{
		{"first claim wins", "the first call with a key runs; a second sees it running with the first's hash",
			func(t *testing.T, s idempotency.Store) {
				if _, ok, err := s.Claim(ctx, "k", hashA, tokA, long); !ok || err != nil {
					t.Fatalf("first claim = %v, %v; want claimed", ok, err)
				}
				e, ok, err := s.Claim(ctx, "k", hashB, tokA, long)
				if ok || err != nil || e.State != idempotency.Running || e.ArgsHash != hashA {
					t.Fatalf("second claim = %+v, %v, %v; want the running entry with hash A", e, ok, err)
				}
			}},
		{"completed entry is returned", "a duplicate after completion gets the stored result",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				if err := s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("result")}, long); err != nil {
					t.Fatal(err)
				}
				e, ok, err := s.Claim(ctx, "k", hashA, tokA, long)
				if ok || err != nil || e.State != idempotency.Done || string(e.Result) != "result" {
					t.Fatalf("claim after completion = %+v, %v, %v; want Done with the result", e, ok, err)
				}
			}},
		{"too large is remembered", "a result over the bound is not stored, but its size is, so a duplicate is told why",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.TooLarge, ArgsHash: hashA, ResultSize: 12345}, long)
				e, _, err := s.Claim(ctx, "k", hashA, tokA, long)
				if err != nil || e.State != idempotency.TooLarge || e.ResultSize != 12345 {
					t.Fatalf("claim = %+v, %v; want TooLarge 12345", e, err)
				}
			}},
		{"release lets the next run", "an outcome that is not stored (a failure) leaves nothing: the next try claims",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				if err := s.Release(ctx, "k", tokA); err != nil {
					t.Fatal(err)
				}
				if _, ok, err := s.Claim(ctx, "k", hashB, tokA, long); !ok || err != nil {
					t.Fatalf("claim after release = %v, %v; want claimed", ok, err)
				}
			}},
		{"keys are separate", "another key (another caller, tool or key) is unaffected",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k1", hashA, tokA, long)
				if _, ok, err := s.Claim(ctx, "k2", hashA, tokA, long); !ok || err != nil {
					t.Fatalf("claim of another key = %v, %v; want claimed", ok, err)
				}
			}},
		{"ttl expires", "an entry past its TTL is gone: the key runs again",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA}, short)
				eventually(t, "the entry expires", func() bool {
					_, ok, err := s.Claim(ctx, "k", hashA, tokA, long)
					return ok && err == nil
				})
			}},
		{"lease expires", "a claim whose replica died ends with its lease: the key runs again",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, short)
				eventually(t, "the claim expires", func() bool {
					_, ok, err := s.Claim(ctx, "k", hashA, tokA, long)
					return ok && err == nil
				})
			}},
		{"a lost claim overwrites nothing", "a call that outlived its lease neither stores over nor drops the claim a later call made",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, short)
				eventually(t, "the first claim expires and a second claims", func() bool {
					_, ok, err := s.Claim(ctx, "k", hashA, tokB, long)
					return ok && err == nil
				})
				if err := s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("late")}, long); !errors.Is(err, idempotency.ErrClaimLost) {
					t.Errorf("the first call's Complete = %v; want ErrClaimLost", err)
				}
				if err := s.Release(ctx, "k", tokA); !errors.Is(err, idempotency.ErrClaimLost) {
					t.Errorf("the first call's Release = %v; want ErrClaimLost", err)
				}
				e, ok, err := s.Claim(ctx, "k", hashA, tokA, long)
				if ok || err != nil || e.State != idempotency.Running || e.Token != tokB {
					t.Fatalf("the key after the lost claim's writes = %+v, %v, %v; want the second claim still running", e, ok, err)
				}
				if err := s.Complete(ctx, "k", tokB, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("second")}, long); err != nil {
					t.Fatalf("the second call's Complete = %v", err)
				}
				if err := s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("late")}, long); !errors.Is(err, idempotency.ErrClaimLost) {
					t.Errorf("Complete over a stored outcome = %v; want ErrClaimLost", err)
				}
				if e, _, _ := s.Claim(ctx, "k", hashA, tokA, long); string(e.Result) != "second" {
					t.Errorf("stored %+v; want the second call's outcome", e)
				}
			}},
		{"an expired claim still completes", "a claim whose lease ended while nobody took the key stores its outcome (duplicates get it)",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, short)
				time.Sleep(2 * short)
				if err := s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("r")}, long); err != nil {
					t.Fatalf("Complete after the lease, key free = %v; want stored", err)
				}
				if e, ok, _ := s.Claim(ctx, "k", hashA, tokB, long); ok || string(e.Result) != "r" {
					t.Errorf("claim after = %+v, claimed %v; want the stored outcome", e, ok)
				}
				if err := s.Release(ctx, "free", tokA); err != nil {
					t.Errorf("Release of a free key = %v; want nil", err)
				}
			}},
		{"wait sees completion", "a duplicate waiting on a running claim gets the outcome when it is stored",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				var wg sync.WaitGroup
				got := make([]idempotency.Entry, 5)
				for i := range got {
					wg.Go(func() {
						e, ok, err := s.Wait(ctx, "k")
						if !ok || err != nil {
							t.Errorf("wait %d = %v, %v", i, ok, err)
						}
						got[i] = e
					})
				}
				time.Sleep(20 * time.Millisecond) // let some start waiting (either order is correct)
				s.Complete(ctx, "k", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("r")}, long)
				wg.Wait()
				for i, e := range got {
					if e.State != idempotency.Done || string(e.Result) != "r" {
						t.Errorf("waiter %d got %+v; want Done r", i, e)
					}
				}
			}},
		{"wait sees release", "a waiter whose first call failed learns the key is free",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				done := make(chan bool)
				go func() { _, ok, _ := s.Wait(ctx, "k"); done <- ok }()
				time.Sleep(20 * time.Millisecond)
				s.Release(ctx, "k", tokA)
				if found := <-done; found {
					t.Fatal("wait after release found an entry; want not found")
				}
			}},
		{"wait is bounded by ctx", "a waiter's own deadline ends its wait with ctx's error",
			func(t *testing.T, s idempotency.Store) {
				s.Claim(ctx, "k", hashA, tokA, long)
				wctx, cancel := context.WithTimeout(ctx, short)
				defer cancel()
				if _, _, err := s.Wait(wctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("wait = %v; want DeadlineExceeded", err)
				}
			}},
		{"wait on nothing", "no entry: nothing to wait for",
			func(t *testing.T, s idempotency.Store) {
				if _, ok, err := s.Wait(ctx, "absent"); ok || err != nil {
					t.Fatalf("wait = %v, %v; want not found", ok, err)
				}
			}},
	}
	for _, kind := range storeKinds() {
		t.Run(kind.name, func(t *testing.T) {
			open := kind.open(t)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					s := open(t)
					tc.run(t, s)
					if t.Failed() {
						t.Log(tc.reason)
					}
				})
			}
		})
	}
}

// Memory is bounded: the oldest completed entry makes room; running
// claims are never evicted (ErrFull instead).
func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	m := idempotency.NewMemory(2)
	m.Claim(ctx, "a", hashA, tokA, long)
	m.Complete(ctx, "a", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA}, long)
	m.Claim(ctx, "b", hashA, tokA, long)
	if _, ok, err := m.Claim(ctx, "c", hashA, tokA, long); !ok || err != nil || m.Len() != 2 {
		t.Fatalf("claim past the bound = %v, %v, len %d; want the completed entry evicted", ok, err, m.Len())
	}
	if _, _, err := m.Claim(ctx, "d", hashA, tokA, long); !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("claim with only running claims held = %v; want ErrFull", err)
	}
}

// Bolt keeps entries across a reopen (a restart) and its sweep deletes
// expired ones from the file.
func TestBoltSurvivesReopenAndSweeps(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "idempotency.db")
	s, err := idempotency.OpenBolt(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Claim(ctx, "kept", hashA, tokA, long)
	s.Complete(ctx, "kept", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA, Result: []byte("r")}, long)
	s.Claim(ctx, "gone", hashA, tokA, long)
	s.Complete(ctx, "gone", tokA, idempotency.Entry{State: idempotency.Done, ArgsHash: hashA}, time.Millisecond)
	s.Close()
	if s, err = idempotency.OpenBolt(path, 0); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, ok, err := s.Claim(ctx, "kept", hashA, tokA, long)
	if ok || err != nil || string(e.Result) != "r" {
		t.Fatalf("after reopen = %+v, %v, %v; want the stored result", e, ok, err)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := s.Sweep(); n != 1 || err != nil || s.Len() != 1 {
		t.Fatalf("sweep = %d, %v, len %d; want the expired entry deleted", n, err, s.Len())
	}
}
