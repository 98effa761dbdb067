package redisstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/idempotency"
)

// Idempotency is the idempotency store of a fleet: each key is one Redis
// string holding idempotency.Encode's form. A claim is SET NX PX with GET
// (one atomic command: claimed, or the live entry back); the outcome
// replaces it under the same key with the TTL, and a release deletes it —
// each in a script that first checks the key still holds the claim.
// Waiters poll the key with a bounded back-off (Redis has no cheap per-key
// notify that survives a replica dying mid-call). Keys are namespace + the caller's scoped key
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

func (s *Idempotency) Claim(ctx context.Context, key string, hash idempotency.Hash, token idempotency.Token, lease time.Duration) (idempotency.Entry, bool, error) {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	running := idempotency.Encode(idempotency.Entry{State: idempotency.Running, ArgsHash: hash, Token: token})
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

// heldBy is the Lua test that the value cur is the claim of the token
// ARGV[1]: Encode's form of a Running entry (state, hash, token).
var heldBy = fmt.Sprintf(`(#cur == %d and string.byte(cur, 1) == %d and string.sub(cur, %d) == ARGV[1])`,
	1+len(idempotency.Hash{})+len(idempotency.Token{}), idempotency.Running, 2+len(idempotency.Hash{}))

// completeScript stores ARGV[2] for ARGV[3] ms when the key holds the
// claim of token ARGV[1] or nothing: 1; else it leaves the key: 0.
var completeScript = redis.NewScript(`
local cur = redis.call("GET", KEYS[1])
if cur and not ` + heldBy + ` then return 0 end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
return 1
`)

// releaseScript deletes the key when it holds the claim of token ARGV[1]:
// 1 (also when there is nothing to delete); else it leaves the key: 0.
var releaseScript = redis.NewScript(`
local cur = redis.call("GET", KEYS[1])
if not cur then return 1 end
if not ` + heldBy + ` then return 0 end
redis.call("DEL", KEYS[1])
return 1
`)

func (s *Idempotency) Complete(ctx context.Context, key string, token idempotency.Token, e idempotency.Entry, ttl time.Duration) error {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	return s.heldOrLost(completeScript.Run(ctx, s.c.rdb, []string{s.ns + key}, token[:], idempotency.Encode(e), max(ttl.Milliseconds(), 1)).Int())
}

func (s *Idempotency) Release(ctx context.Context, key string, token idempotency.Token) error {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	return s.heldOrLost(releaseScript.Run(ctx, s.c.rdb, []string{s.ns + key}, token[:]).Int())
}

// heldOrLost is a script's answer as Complete's or Release's error.
func (s *Idempotency) heldOrLost(ok int, err error) error {
	if err != nil {
		return err
	}
	if ok == 0 {
		return idempotency.ErrClaimLost
	}
	return nil
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
