package server

import (
	"context"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redisstate"
)

// RedisConfig is how every replica reaches the shared Redis (rate limits,
// idempotency, MCP tasks, console sessions): one server, Sentinel or a Cluster. Empty Addr:
// no Redis, each replica on its own.
type RedisConfig = redisstate.Config

// Key namespaces in Redis: one per kind of state, so nothing collides.
const (
	redisToolBuckets   = "flowdrop:rl:tool:"
	redisMethodBuckets = "flowdrop:rl:method:"
)

// openRedis connects to Redis when configured. An unreachable Redis does
// not stop start-up (it may come up later; until then the fallback
// decides): it is logged.
func (g *Gateway) openRedis(ctx context.Context, cfg RedisConfig) error {
	if !cfg.On() {
		return nil
	}
	c, err := redisstate.Open(cfg)
	if err != nil {
		return err
	}
	redisstate.SetLogger(g.log)
	g.redis = c
	// Registered here, once, whatever builds limiters later (a policy reload too).
	g.countFallback = g.metrics.RateLimitFallbackCounter(policy.FallbackLocal, policy.FallbackDeny)
	if err := c.Ping(ctx); err != nil {
		g.log.Warn("redis unreachable at start-up: rate limits use the fallback until it answers", "error", err.Error())
	} else {
		g.log.Info("redis connected: rate limits are fleet-wide")
	}
	return nil
}

// sharedLimits makes a limiter decide in Redis (namespace ns) when Redis
// is configured: nothing otherwise.
func (g *Gateway) sharedLimits(ns, what string, fallback string) []policy.RateLimitOption {
	if g.redis == nil {
		return nil
	}
	if fallback == "" {
		fallback = policy.FallbackLocal
	}
	return []policy.RateLimitOption{policy.WithShared(g.redis, policy.SharedOptions{Namespace: ns, OnFallback: g.countFallback,
		OnState: func(err error) {
			if err != nil {
				g.log.Warn("redis unreachable: "+what+" rate limits fall back until it answers", "fallback", fallback, "error", err.Error())
				return
			}
			g.log.Info("redis answering again: " + what + " rate limits are fleet-wide again")
		}})}
}

func (g *Gateway) closeRedis() {
	if g.redis != nil {
		_ = g.redis.Close()
	}
}
