package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"
)

// What a limiter with shared buckets does while they cannot decide
// (rate_limit.fallback).
const (
	// FallbackLocal (the default): each replica enforces the limit with its
	// own buckets, so the fleet admits up to replicas × the limit until the
	// shared store is back. Still a limit on every caller, never none; and a
	// Redis outage does not become an outage of every tool.
	FallbackLocal = "local"
	// FallbackDeny refuses every limited call (Unavailable, with RetryInfo)
	// until the shared store is back: for limits that guard a quota that
	// must not be exceeded fleet-wide.
	FallbackDeny = "deny"
)

// SharedBuckets are token buckets every replica shares
// (redisstate.Client). TakeToken returns 0 when the call may go on, else
// the wait until a token; an error means no decision was made.
type SharedBuckets interface {
	TakeToken(ctx context.Context, key string, rate float64, burst int) (time.Duration, error)
}

// SharedOptions configure WithShared.
type SharedOptions struct {
	// Namespace prefixes every key (e.g. "flowdrop:rl:"), so registry and
	// tool buckets, and other users of the same Redis, never collide.
	Namespace string
	// RetryInterval is how long, after a failure, calls skip the shared
	// store and fall back before one call tries it again (default 1s): a
	// down or slow Redis then costs one timeout per interval, not one per call.
	RetryInterval time.Duration
	// OnFallback is called for each call the fallback decided (metrics).
	OnFallback func(mode string)
	// OnState is called when the shared store stops answering (err) and
	// when it answers again (nil): once per change, so logging it is
	// naturally rate-limited.
	OnState func(err error)
}

// WithShared makes the limiter decide with shared buckets; its own become
// the fallback (rate_limit.fallback).
func WithShared(s SharedBuckets, o SharedOptions) RateLimitOption {
	return func(r *RateLimiter) {
		if o.RetryInterval <= 0 {
			o.RetryInterval = time.Second
		}
		r.shared = &sharedBuckets{store: s, opt: o}
	}
}

type sharedBuckets struct {
	store SharedBuckets
	opt   SharedOptions
	// down is set while the store is failing; until then no call probes it
	// (unix ns).
	down      atomic.Bool
	downUntil atomic.Int64
}

// key is the bucket's Redis key: namespace, a hash of the caller (a
// subject can be long and may be sensitive; the hash is fixed-length), the
// tool or method name (bounded: checked before the rate-limit stage).
func (s *sharedBuckets) key(k bucketKey) string {
	h := sha256.Sum256([]byte(k.method + "\x00" + k.subject))
	return s.opt.Namespace + hex.EncodeToString(h[:16]) + ":" + k.tool
}

// skip reports whether this call falls back without asking the store: it
// is down and the retry interval has not passed. When it has, exactly one
// call (the CAS winner) probes; the others keep falling back.
func (s *sharedBuckets) skip() bool {
	if !s.down.Load() {
		return false
	}
	until, now := s.downUntil.Load(), time.Now().UnixNano()
	if now < until {
		return true
	}
	return !s.downUntil.CompareAndSwap(until, now+int64(s.opt.RetryInterval))
}

func (s *sharedBuckets) failed(err error) {
	s.downUntil.Store(time.Now().Add(s.opt.RetryInterval).UnixNano())
	if !s.down.Swap(true) && s.opt.OnState != nil {
		s.opt.OnState(err)
	}
}

func (s *sharedBuckets) answered() {
	if s.down.Load() && s.down.Swap(false) && s.opt.OnState != nil {
		s.opt.OnState(nil)
	}
}

// takeShared asks the shared bucket; when it cannot decide, the fallback
// does (never: no limit).
func (r *RateLimiter) takeShared(ctx context.Context, c Caller, k bucketKey, tool string) error {
	s := r.shared
	if !s.skip() {
		lim, burst := r.limitOf(k)
		wait, err := s.store.TakeToken(ctx, s.key(k), lim, burst)
		if err == nil {
			s.answered()
			if wait > 0 {
				return r.limited(c, tool, lim, burst, wait)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err() // the caller gave up; says nothing about the store
		}
		s.failed(err)
	}
	mode := r.cfg.Fallback
	if mode == "" {
		mode = FallbackLocal
	}
	if s.opt.OnFallback != nil {
		s.opt.OnFallback(mode)
	}
	if mode == FallbackDeny {
		return &Error{Code: Unavailable, Reason: ReasonRateLimitUnavailable, Limit: "rate", Tool: tool, RetryAfter: s.opt.RetryInterval,
			Message: "the fleet-wide rate limit cannot be checked right now and the policy refuses calls until it can; try again later"}
	}
	return r.takeLocal(c, k, tool)
}
