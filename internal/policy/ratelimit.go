package policy

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimitConfig configures token buckets per caller × tool.
type RateLimitConfig struct {
	// Rate is tokens per second; Burst the bucket size. Rate <= 0 disables limiting.
	Rate  float64
	Burst int
	// Tools overrides Rate and Burst for the tools whose names match (glob
	// patterns as in authz; the first match wins), e.g. a slower bucket for
	// "run_*". An override applies even when Rate is 0 (no default limit).
	Tools []ToolRate
	// MaxBuckets bounds memory (default 100000). When full, the least recently
	// used bucket is dropped (it restarts full if that pair calls again).
	MaxBuckets int
	// IdleTimeout drops buckets unused this long (default 10m); by then a
	// bucket has refilled anyway, so dropping it changes no decision if
	// IdleTimeout >= Burst/Rate.
	IdleTimeout time.Duration
	// Registry is the caller × method bucket of each registry call
	// (ListTools, GetTool, RegisterTool, ...), kept apart from the tool
	// buckets so paging a listing never spends invocation tokens and the
	// other way round. Zero: DefaultRegistryRate/Burst, on even when tool
	// calls are not limited.
	Registry MethodRate
	// Fallback is what the limiter does when its shared buckets (Redis)
	// cannot decide: FallbackLocal (also when empty) or FallbackDeny.
	Fallback string
	// Mode is ModeEnforce (also "") or ModeShadow: a shadow limiter's
	// refusals are recorded as shadow denials and the call proceeds (the
	// pipeline's rate-limit stage), so a new limit can be watched first.
	Mode string
}

// MethodRate is a rate (tokens per second) and burst.
type MethodRate struct {
	Rate  float64
	Burst int
}

// The registry calls' default bucket: generous for paging (`tools list
// --page-size 2` over hundreds of tools) and for scripted registrations, but
// a bound on a caller hammering the store.
const (
	DefaultRegistryRate  = 50
	DefaultRegistryBurst = 100
)

// ToolRate is one per-tool override of RateLimitConfig.
type ToolRate struct {
	Match string // a path.Match glob over tool names
	Rate  float64
	Burst int
}

// RateLimiter is a bounded set of token buckets keyed by caller subject and
// tool, built on golang.org/x/time/rate. Safe for concurrent use.
type RateLimiter struct {
	cfg  RateLimitConfig
	now  func() time.Time
	what string // what a bucket limits, for messages: "tool" or "method"

	mu  sync.Mutex
	lru *list.List // front = most recently used; values are *bucket
	m   map[bucketKey]*list.Element

	// shared, when set, decides instead of the local buckets
	// (ratelimit_shared.go); the local ones are its fallback.
	shared *sharedBuckets
}

type bucketKey struct{ subject, method, tool string }

type bucket struct {
	key  bucketKey
	lim  *rate.Limiter
	last time.Time
}

// RateLimitOption configures NewRateLimiter.
type RateLimitOption func(*RateLimiter)

// WithClock replaces time.Now (tests use a fixed clock; nothing sleeps).
func WithClock(now func() time.Time) RateLimitOption { return func(r *RateLimiter) { r.now = now } }

// NewRateLimiter validates cfg.
func NewRateLimiter(cfg RateLimitConfig, opts ...RateLimitOption) (*RateLimiter, error) {
	if err := checkMode("rate_limit", cfg.Mode); err != nil {
		return nil, err
	}
	if cfg.Rate > 0 && cfg.Burst < 1 {
		return nil, errors.New("rate_limit: burst must be at least 1 when rate is set")
	}
	if math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) {
		return nil, errors.New("rate_limit: rate must be a finite number")
	}
	for i, o := range cfg.Tools {
		if _, err := path.Match(o.Match, ""); err != nil || o.Match == "" {
			return nil, fmt.Errorf("rate_limit.tools[%d]: match %q is not a tool-name glob", i, o.Match)
		}
		if !(o.Rate > 0) || math.IsInf(o.Rate, 0) || o.Burst < 1 {
			return nil, fmt.Errorf("rate_limit.tools[%d] (%s): want a finite rate above 0 and a burst of at least 1, got rate %g, burst %d", i, o.Match, o.Rate, o.Burst)
		}
	}
	if cfg.MaxBuckets <= 0 {
		cfg.MaxBuckets = 100_000
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if err := checkMethodRate(cfg.Registry); err != nil {
		return nil, err
	}
	switch cfg.Fallback {
	case "", FallbackLocal, FallbackDeny:
	default:
		return nil, fmt.Errorf(`rate_limit.fallback %q: must be "local" or "deny"`, cfg.Fallback)
	}
	r := &RateLimiter{cfg: cfg, now: time.Now, what: "tool", lru: list.New(), m: map[bucketKey]*list.Element{}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Shadow reports whether the limiter is in shadow mode (rate_limit.mode).
func (r *RateLimiter) Shadow() bool { return r != nil && r.cfg.Mode == ModeShadow }

// On reports whether any limit is configured (nil: none).
func (r *RateLimiter) On() bool { return r != nil && (r.cfg.Rate > 0 || len(r.cfg.Tools) > 0) }

func checkMethodRate(m MethodRate) error {
	if m == (MethodRate{}) {
		return nil
	}
	if !(m.Rate > 0) || math.IsInf(m.Rate, 0) || m.Burst < 1 {
		return fmt.Errorf("rate_limit.registry: want a finite rate above 0 and a burst of at least 1, got rate %g, burst %d", m.Rate, m.Burst)
	}
	return nil
}

// NewRegistryRateLimiter is the limiter of registry calls: buckets per
// caller × method, in a keyspace of their own, at cfg.Registry's rate
// (default DefaultRegistryRate/Burst), with cfg's MaxBuckets and IdleTimeout.
func NewRegistryRateLimiter(cfg RateLimitConfig, opts ...RateLimitOption) (*RateLimiter, error) {
	m := cfg.Registry
	if err := checkMethodRate(m); err != nil {
		return nil, err
	}
	if m == (MethodRate{}) {
		m = MethodRate{Rate: DefaultRegistryRate, Burst: DefaultRegistryBurst}
	}
	r, err := NewRateLimiter(RateLimitConfig{Rate: m.Rate, Burst: m.Burst, MaxBuckets: cfg.MaxBuckets, IdleTimeout: cfg.IdleTimeout,
		Fallback: cfg.Fallback}, opts...)
	if err != nil {
		return nil, err
	}
	r.what = "method"
	return r, nil
}

// Allow takes one token from the caller × tool bucket or refuses with
// ResourceExhausted and RetryAfter set to when a token will be available.
// tool is a registered tool the caller is offered, or a method name: the
// pipeline sends every other name to AllowUnoffered, so the buckets stay bounded by the
// registry, not by what callers send.
// With shared buckets, ctx bounds the Redis round trip.
func (r *RateLimiter) Allow(ctx context.Context, c Caller, tool string) error {
	if !r.On() {
		return nil
	}
	if r.cfg.Rate <= 0 {
		// Only overrides: a tool none matches is not limited (no lock, no bucket).
		if lim, _ := r.limitFor(tool); lim <= 0 {
			return nil
		}
	}
	return r.take(ctx, c, bucketKey{subject: c.Subject, method: c.Method, tool: tool}, tool)
}

// AllowUnoffered takes one token from the caller's one bucket shared by
// every name it is not offered (unregistered, or refused by its allow/deny
// lists), at the default rate; per-tool overrides do not apply, so the
// answer is the same whether such a tool exists or not. tool only names the
// call in the refusal.
func (r *RateLimiter) AllowUnoffered(ctx context.Context, c Caller, tool string) error {
	if r == nil || r.cfg.Rate <= 0 {
		return nil
	}
	return r.take(ctx, c, bucketKey{subject: c.Subject, method: c.Method, tool: unofferedTools}, tool)
}

// unofferedTools is the bucket key of AllowUnoffered's shared bucket: no
// tool has an empty name.
const unofferedTools = ""

// take takes a token from the bucket k: the shared one when configured
// (falling back as configured when it cannot decide), else the local one.
func (r *RateLimiter) take(ctx context.Context, c Caller, k bucketKey, tool string) error {
	if r.shared != nil {
		return r.takeShared(ctx, c, k, tool)
	}
	return r.takeLocal(c, k, tool)
}

// limitOf is bucket k's rate and burst (the default one for the shared
// bucket of unoffered tools).
func (r *RateLimiter) limitOf(k bucketKey) (float64, int) {
	if k.tool == unofferedTools {
		return r.cfg.Rate, r.cfg.Burst
	}
	return r.limitFor(k.tool)
}

// takeLocal takes a token from the local bucket k, making it if needed
// (with the tool's limit; the default one for the shared bucket).
func (r *RateLimiter) takeLocal(c Caller, k bucketKey, tool string) error {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evictIdle(now)
	var b *bucket
	if e, ok := r.m[k]; ok {
		r.lru.MoveToFront(e)
		b = e.Value.(*bucket)
	} else {
		// The tool's limit is fixed by the configuration, so it is looked up
		// once, when the pair's bucket is made (it is positive here: above
		// 0 by default, or an override, validated positive).
		lim, burst := r.limitOf(k)
		if r.lru.Len() >= r.cfg.MaxBuckets {
			r.remove(r.lru.Back())
		}
		b = &bucket{key: k, lim: rate.NewLimiter(rate.Limit(lim), burst)}
		r.m[k] = r.lru.PushFront(b)
	}
	b.last = now
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now) // a refused call must not consume the future token
		return r.limited(c, tool, float64(b.lim.Limit()), b.lim.Burst(), d)
	}
	return nil
}

// limited is the refusal of a call over its bucket's limit.
func (r *RateLimiter) limited(c Caller, tool string, lim float64, burst int, d time.Duration) error {
	return &Error{Code: ResourceExhausted, Reason: ReasonRateLimited, Limit: "rate", Tool: tool, RetryAfter: d,
		Message: fmt.Sprintf("caller %q is over the rate limit for %s %q (%g/s, burst %d); retry after %s",
			Bound(c.Subject), r.what, Bound(tool), lim, burst, d.Round(time.Millisecond))}
}

// limitFor is the tool's rate and burst: the first matching override, else
// the default.
func (r *RateLimiter) limitFor(tool string) (float64, int) {
	for _, o := range r.cfg.Tools {
		if ok, _ := path.Match(o.Match, tool); ok { // patterns checked in NewRateLimiter
			return o.Rate, o.Burst
		}
	}
	return r.cfg.Rate, r.cfg.Burst
}

// Len reports the number of live buckets.
func (r *RateLimiter) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}

func (r *RateLimiter) evictIdle(now time.Time) {
	for e := r.lru.Back(); e != nil; e = r.lru.Back() {
		if now.Sub(e.Value.(*bucket).last) < r.cfg.IdleTimeout {
			return
		}
		r.remove(e)
	}
}

func (r *RateLimiter) remove(e *list.Element) {
	delete(r.m, e.Value.(*bucket).key)
	r.lru.Remove(e)
}
