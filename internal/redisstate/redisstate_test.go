package redisstate_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		cfg          redisstate.Config
		want         string // "" valid; else a substring of the error
	}{
		{"off", "no addr, nothing else: no Redis", redisstate.Config{}, ""},
		{"single", "one host:port", redisstate.Config{Addr: "10.0.0.5:6379"}, ""},
		{"single-explicit", "mode single names the default", redisstate.Config{Addr: "10.0.0.5:6379", Mode: redisstate.ModeSingle}, ""},
		{"single-two", "a single Redis is one server: a list needs sentinel or cluster",
			redisstate.Config{Addr: "10.0.0.5:6379,10.0.0.6:6379"}, "a single Redis is one host:port"},
		{"sentinel", "the Sentinels and the primary's name",
			redisstate.Config{Addr: "10.0.0.5:26379,10.0.0.6:26379", Mode: redisstate.ModeSentinel, SentinelMaster: "flowdrop"}, ""},
		{"sentinel-no-master", "Sentinel cannot find a primary without its name",
			redisstate.Config{Addr: "10.0.0.5:26379", Mode: redisstate.ModeSentinel}, "sentinel master"},
		{"master-without-sentinel", "a sentinel setting without mode sentinel is a mistake, not ignored",
			redisstate.Config{Addr: "10.0.0.5:6379", SentinelMaster: "flowdrop"}, "without mode sentinel"},
		{"cluster", "some of the Cluster's nodes", redisstate.Config{Addr: "10.0.0.5:6379,10.0.0.6:6379", Mode: redisstate.ModeCluster}, ""},
		{"cluster-db", "a Cluster has only database 0",
			redisstate.Config{Addr: "10.0.0.5:6379", Mode: redisstate.ModeCluster, DB: 2}, "only database 0"},
		{"bad-mode", "an unknown mode is refused, naming the choices",
			redisstate.Config{Addr: "10.0.0.5:6379", Mode: "ring"}, "want single, sentinel or cluster"},
		{"bad-addr-in-list", "every address of a list is checked",
			redisstate.Config{Addr: "10.0.0.5:6379,nohost", Mode: redisstate.ModeCluster}, `addr "nohost"`},
		{"mode-without-addr", "a mode without an address is a mistake",
			redisstate.Config{Mode: redisstate.ModeCluster}, "without redis addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v; want valid (%s)", err, tc.reason)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v; want an error with %q (%s)", err, tc.want, tc.reason)
			}
		})
	}
}

// TestTakeTokenOnEveryDeployment: the GCRA script decides the same on one
// server, behind Sentinel and on a Cluster whose buckets spread over every
// shard — each bucket admits exactly its burst.
func TestTakeTokenOnEveryDeployment(t *testing.T) {
	for _, d := range []struct {
		name    string
		connect func(t *testing.T) redisstate.Config
	}{
		{"single", func(t *testing.T) redisstate.Config { return redisstate.Config{Addr: redistest.Start(t).Addr()} }},
		{"sentinel", func(t *testing.T) redisstate.Config {
			return redisstate.Config{Addr: redistest.StartSentinel(t).Addrs(), Mode: redisstate.ModeSentinel, SentinelMaster: redistest.MasterName}
		}},
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
			ctx := context.Background()
			const keys, burst = 40, 3
			for k := range keys {
				key := fmt.Sprintf("test:rl:caller%d:tool", k)
				for i := range burst + 1 {
					wait, err := c.TakeToken(ctx, key, 0.001, burst)
					if err != nil {
						t.Fatalf("%s take %d: %v", key, i, err)
					}
					if allowed := wait == 0; allowed != (i < burst) {
						t.Fatalf("%s take %d: allowed %v, want %v (burst %d)", key, i, allowed, i < burst, burst)
					}
				}
			}
			if d.name != "cluster" {
				return
			}
			var shards atomic.Int32 // ForEachMaster asks the masters concurrently
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Addrs()})
			defer cc.Close()
			if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				if n, err := m.DBSize(ctx).Result(); err == nil && n > 0 {
					shards.Add(1)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n := shards.Load(); n < 2 {
				t.Errorf("the buckets sit on %d shard(s); the test means them spread", n)
			}
		})
	}
}
