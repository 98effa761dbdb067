package pipeline_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/idempotency"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// lostAnswerStore is a real memory store whose next Claim is applied and
// then answered with an error, as a Redis primary that dies after writing
// (and replicating) the claim but before answering does.
type lostAnswerStore struct {
	idempotency.Store
	lose atomic.Bool
}

func (s *lostAnswerStore) Claim(ctx context.Context, key string, hash idempotency.Hash, token idempotency.Token, lease time.Duration) (idempotency.Entry, bool, error) {
	e, claimed, err := s.Store.Claim(ctx, key, hash, token, lease)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		return idempotency.Entry{}, false, errors.New("read tcp 127.0.0.1:6379: connection reset by peer")
	}
	return e, claimed, err
}

// TestClaimWhoseAnswerWasLostIsReleased (found by the chaos soak): a call
// whose Claim failed is refused and runs nothing, and the claim the store
// wrote anyway is released, so the caller's retry with the same key runs
// instead of being refused as in progress until the lease ends (an hour
// here; the retry's deadline is a guard, far below it).
func TestClaimWhoseAnswerWasLostIsReleased(t *testing.T) {
	t.Parallel()
	be := &echoBackend{}
	store := &lostAnswerStore{Store: idempotency.NewMemory(100)}
	store.lose.Store(true)
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend = demoRegistry(t), be
	cfg.Idempotency = &pipeline.Idempotency{Store: store, TTL: time.Hour, MaxResultBytes: 1 << 20, Lease: time.Hour}
	p := pipeline.New(cfg)
	ctx := policy.WithCaller(context.Background(), invoker)
	call := func() (pipeline.Result, *pipeline.Error) {
		c := pipeline.NewCall("create_note", "", args(t, map[string]any{"title": "x"}))
		c.IdempotencyKey = "orphan-1"
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.Invoke(cctx, c)
	}
	if _, err := call(); err == nil || err.Reason != pipeline.ReasonIdempotencyUnavailable {
		t.Fatalf("the call whose claim's answer was lost: err = %+v, want %s", err, pipeline.ReasonIdempotencyUnavailable)
	}
	if len(be.calls) != 0 {
		t.Fatalf("the refused call reached the backend %d times", len(be.calls))
	}
	res, err := call()
	if err != nil {
		t.Fatalf("the retry with the same key: %+v; want it run (the lost claim released), not refused until the lease ends", err)
	}
	if res.Replayed || len(be.calls) != 1 {
		t.Errorf("the retry: replayed %v, backend calls %d; want one run", res.Replayed, len(be.calls))
	}
}

// failingReleaseStore is a real memory store whose next Release fails
// without being applied (the store away when a failed run frees its key).
type failingReleaseStore struct {
	idempotency.Store
	fail atomic.Bool
}

func (s *failingReleaseStore) Release(ctx context.Context, key string, token idempotency.Token) error {
	if s.fail.CompareAndSwap(true, false) {
		return errors.New("dial tcp 127.0.0.1:6379: connection refused")
	}
	return s.Store.Release(ctx, key, token)
}

// TestFailedRunWhoseReleaseFailedIsReleasedLater: a keyed run that failed
// at its backend frees its key so the retry runs; when that Release fails
// (the store away for a moment) it is retried in the background, so the
// retry runs instead of being refused as in progress until the lease ends
// (an hour here; the retry's deadline is a guard, far below it).
func TestFailedRunWhoseReleaseFailedIsReleasedLater(t *testing.T) {
	t.Parallel()
	be := &echoBackend{err: errors.New("backend down")}
	store := &failingReleaseStore{Store: idempotency.NewMemory(100)}
	store.fail.Store(true)
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend = demoRegistry(t), be
	cfg.Idempotency = &pipeline.Idempotency{Store: store, TTL: time.Hour, MaxResultBytes: 1 << 20, Lease: time.Hour}
	p := pipeline.New(cfg)
	ctx := policy.WithCaller(context.Background(), invoker)
	call := func() (pipeline.Result, *pipeline.Error) {
		c := pipeline.NewCall("create_note", "", args(t, map[string]any{"title": "x"}))
		c.IdempotencyKey = "release-1"
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return p.Invoke(cctx, c)
	}
	if _, err := call(); err == nil {
		t.Fatal("the first call succeeded; want its backend's failure")
	}
	be.mu.Lock()
	be.err = nil
	be.mu.Unlock()
	res, err := call()
	if err != nil {
		t.Fatalf("the retry with the same key: %+v; want it run (the failed run's key released), not refused until the lease ends", err)
	}
	be.mu.Lock()
	n := len(be.calls)
	be.mu.Unlock()
	if res.Replayed || n != 2 {
		t.Errorf("the retry: replayed %v, backend calls %d; want it run (two calls in all)", res.Replayed, n)
	}
}
