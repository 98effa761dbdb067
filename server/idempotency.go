package server

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/flowdrop/gateway/internal/idempotency"
	"github.com/flowdrop/gateway/server/pipeline"
)

// IdempotencyConfig is the policy file's idempotency section (read at
// start-up).
type IdempotencyConfig struct {
	// TTL is how long a call's outcome is kept for its key's retries
	// (0: DefaultIdempotencyTTL).
	TTL time.Duration
	// MaxResultBytes bounds a stored result (0: DefaultIdempotencyMaxResultBytes).
	MaxResultBytes int
	// MaxEntries bounds the memory store (0: idempotency.DefaultMaxEntries).
	MaxEntries int
}

// Idempotency defaults.
const (
	DefaultIdempotencyTTL            = 24 * time.Hour
	DefaultIdempotencyMaxResultBytes = 1 << 20
	// IdempotencyFileName is the bbolt file of the idempotency store, next
	// to the registry's in the data directory.
	IdempotencyFileName = "idempotency.db"
)

// Store kinds of the idempotency store, for the start-up log.
const (
	idempotencyRedis  = "redis"
	idempotencyBolt   = "bolt"
	idempotencyMemory = "memory"
)

// redisIdempotency is the idempotency keys' namespace in Redis.
const redisIdempotency = "flowdrop:idem:"

// idempotencyLeaseMargin: a running claim outlives the longest backend
// call by this much.
const idempotencyLeaseMargin = 30 * time.Second

func (c IdempotencyConfig) validate() error {
	switch {
	case c.TTL < 0:
		return fmt.Errorf("idempotency.ttl must not be negative, got %v", c.TTL)
	case c.MaxResultBytes < 0:
		return fmt.Errorf("idempotency.max_result_bytes must not be negative, got %d", c.MaxResultBytes)
	case c.MaxEntries < 0:
		return fmt.Errorf("idempotency.max_entries must not be negative, got %d", c.MaxEntries)
	}
	return nil
}

// openIdempotency picks the store: Redis when configured (a fleet), else
// a bbolt file next to the registry's when the registry is in bolt (one
// node, kept across restarts), else memory (one process).
func (g *Gateway) openIdempotency(cfg *Config) (*pipeline.Idempotency, error) {
	ic := cfg.Policy.Idempotency
	id := &pipeline.Idempotency{TTL: ic.TTL, MaxResultBytes: ic.MaxResultBytes, Lease: cfg.MaxCallTimeout + idempotencyLeaseMargin}
	if id.TTL == 0 {
		id.TTL = DefaultIdempotencyTTL
	}
	if id.MaxResultBytes == 0 {
		id.MaxResultBytes = DefaultIdempotencyMaxResultBytes
	}
	kind := idempotencyMemory
	switch {
	case g.redis != nil:
		kind, id.Store = idempotencyRedis, g.redis.Idempotency(redisIdempotency)
	case cfg.Store.Kind == StoreBolt:
		path := filepath.Join(cfg.Store.DataDir, IdempotencyFileName)
		s, err := idempotency.OpenBolt(path, 0)
		if err != nil {
			return nil, err
		}
		kind, id.Store = idempotencyBolt, s
	default:
		id.Store = idempotency.NewMemory(ic.MaxEntries)
	}
	g.idempotency = id
	g.log.Info("idempotency store opened", "store", kind, "ttl", id.TTL.String(), "max_result_bytes", id.MaxResultBytes)
	return id, nil
}

func (g *Gateway) closeIdempotency() {
	if g.idempotency != nil {
		_ = g.idempotency.Store.Close()
	}
}
