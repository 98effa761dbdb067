package redisstate

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/idempotency"
)

// Idempotency is the idempotency store of a fleet: each key is one Redis
// string holding idempotency.Encode's form. A claim is SET NX PX with GET
// (one atomic command: claimed, or the live entry back); the outcome
// replaces it under the same key with the TTL. Waiters poll the key with
// a bounded back-off (Redis has no cheap per-key notify that survives a
// replica dying mid-call). Keys are namespace + the caller's scoped key
// (already a hash: no caller in clear).
type Idempotency struct {
	c  *Client
	ns string
}

// Idempotency returns the store under namespace ns (e.g. "flowdrop:idem:").
func (c *Client) Idempotency(ns string) *Idempotency { return &Idempotency{c: c, ns: ns} }

var _ idempotency.Store = (*Idempotency)(nil)

func (s *Idempotency) cmdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.c.timeout)
}

func (s *Idempotency) Claim(ctx context.Context, key string, hash idempotency.Hash, lease time.Duration) (idempotency.Entry, bool, error) {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	running := idempotency.Encode(idempotency.Entry{State: idempotency.Running, ArgsHash: hash})
	old, err := s.c.rdb.SetArgs(ctx, s.ns+key, running, redis.SetArgs{Mode: "NX", Get: true, TTL: lease}).Bytes()
	if errors.Is(err, redis.Nil) {
		return idempotency.Entry{}, true, nil // no entry: ours now
	}
	if err != nil {
		return idempotency.Entry{}, false, err
	}
	e, err := idempotency.Decode(old)
	return e, false, err
}

func (s *Idempotency) Complete(ctx context.Context, key string, e idempotency.Entry, ttl time.Duration) error {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	return s.c.rdb.Set(ctx, s.ns+key, idempotency.Encode(e), ttl).Err()
}

func (s *Idempotency) Release(ctx context.Context, key string) error {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	return s.c.rdb.Del(ctx, s.ns+key).Err()
}

// The waiters' polling back-off: from pollFirst doubling to pollMax.
const (
	pollFirst = 2 * time.Millisecond
	pollMax   = 100 * time.Millisecond
)

func (s *Idempotency) Wait(ctx context.Context, key string) (idempotency.Entry, bool, error) {
	delay := pollFirst
	for {
		cctx, cancel := s.cmdCtx(ctx)
		b, err := s.c.rdb.Get(cctx, s.ns+key).Bytes()
		cancel()
		if errors.Is(err, redis.Nil) {
			return idempotency.Entry{}, false, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return idempotency.Entry{}, false, ctx.Err()
			}
			return idempotency.Entry{}, false, err
		}
		e, err := idempotency.Decode(b)
		if err != nil || e.State != idempotency.Running {
			return e, err == nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return idempotency.Entry{}, false, ctx.Err()
		}
		delay = min(2*delay, pollMax)
	}
}

// Close does nothing: the client is the gateway's, closed with it.
func (s *Idempotency) Close() error { return nil }
