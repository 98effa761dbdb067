package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"
)

// The kinds of fault the schedule injects, in its default order.
const (
	FaultBackend      = "backend"       // one of the two backend addresses closed
	FaultReplica      = "replica"       // a gateway replica killed (SIGKILL)
	FaultEtcd         = "etcd"          // the etcd member stopped
	FaultRedisPrimary = "redis-primary" // the Redis primary killed: Sentinel fails over
	FaultRedisReplica = "redis-replica" // the Redis replica killed
)

// DefaultFaults is the schedule's cycle.
var DefaultFaults = []string{FaultBackend, FaultReplica, FaultEtcd, FaultRedisPrimary, FaultRedisReplica}

// Fault is one injected fault: what, when it began and when its restore
// began, and what the schedule measured itself (etcd: when each replica
// saw a write made after the restore).
type Fault struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Down   time.Time `json:"-"`
	Up     time.Time `json:"-"`
	// probe is, per replica, how long after Up a probe succeeded (-1: never).
	probe []time.Duration
}

// schedule runs the faults in order, cycling, each for outage with gap
// between them, until ctx ends; it returns what it did. It runs on the
// test's goroutine (the servers' Restart may fail the test).
func schedule(ctx context.Context, t testing.TB, f *Fleet, c *Callers, kinds []string, outage, gap time.Duration) []*Fault {
	var done []*Fault
	for cycle := 0; ; cycle++ {
		for _, kind := range kinds {
			if !wait(ctx, gap) {
				return done
			}
			// A fault is started only if it can be restored and measured
			// before the run ends.
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < outage+gap {
				return done
			}
			fault := inject(ctx, t, f, kind, cycle)
			done = append(done, fault)
			t.Logf("chaos: %s %s down", fault.Kind, fault.Target)
			wait(context.Background(), outage)
			restore(ctx, t, f, c, fault)
			t.Logf("chaos: %s %s restored", fault.Kind, fault.Target)
		}
	}
}

func wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func inject(ctx context.Context, t testing.TB, f *Fleet, kind string, cycle int) *Fault {
	fault := &Fault{Kind: kind}
	switch kind {
	case FaultBackend:
		b := f.Backends[cycle%len(f.Backends)]
		fault.Target = b.Name
		b.Stop()
	case FaultReplica:
		r := f.Replicas[cycle%len(f.Replicas)]
		fault.Target = fmt.Sprintf("replica-%d", r.Index)
		r.Kill()
	case FaultEtcd:
		fault.Target = "etcd"
		f.Etcd.Stop()
	case FaultRedisPrimary:
		// Only a synced replica can be promoted with the data (an empty
		// one would drop every key: not what this fault is about).
		primary, replica := redisRoles(ctx, t, f)
		waitSynced(t, replica)
		fault.Target = "primary " + primary.Addr()
		primary.Stop()
	case FaultRedisReplica:
		_, replica := redisRoles(ctx, t, f)
		fault.Target = "replica " + replica.Addr()
		replica.Stop()
	default:
		t.Fatalf("chaos: unknown fault %q (want one of %s)", kind, strings.Join(DefaultFaults, ", "))
	}
	fault.Down = time.Now()
	return fault
}

func restore(ctx context.Context, t testing.TB, f *Fleet, c *Callers, fault *Fault) {
	fault.Up = time.Now()
	switch fault.Kind {
	case FaultBackend:
		for _, b := range f.Backends {
			if b.Name == fault.Target {
				if err := b.Restart(toolEcho, toolLimited); err != nil {
					t.Fatal(err)
				}
			}
		}
	case FaultReplica:
		for _, r := range f.Replicas {
			if fmt.Sprintf("replica-%d", r.Index) == fault.Target {
				if err := r.Start(); err != nil {
					t.Fatal(err)
				}
			}
		}
	case FaultEtcd:
		f.Etcd.Restart()
		fault.probe = probeRegistry(ctx, t, f, c, fault.Up)
	case FaultRedisPrimary, FaultRedisReplica:
		// The server comes back empty; Sentinel makes it a replica of
		// the primary in place.
		addr := fault.Target[strings.Index(fault.Target, " ")+1:]
		for _, s := range []*redistest.Server{f.Redis.Primary, f.Redis.Replica} {
			if s.Addr() == addr {
				s.Restart()
			}
		}
	}
}

// redisRoles says which of the two data servers is the primary now.
func redisRoles(ctx context.Context, t testing.TB, f *Fleet) (primary, replica *redistest.Server) {
	addr, err := f.Redis.PrimaryAddr(ctx)
	if err != nil {
		t.Fatalf("chaos: ask a Sentinel for the primary: %v", err)
	}
	if f.Redis.Primary.Addr() == addr {
		return f.Redis.Primary, f.Redis.Replica
	}
	return f.Redis.Replica, f.Redis.Primary
}

// syncTimeout bounds waiting for a replica to sync: a guard.
const syncTimeout = 60 * time.Second

func waitSynced(t testing.TB, s *redistest.Server) {
	rc := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") &&
			!strings.Contains(info, "master_sync_in_progress:1") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("chaos: Redis %s did not become a synced replica: %v %s", s.Addr(), err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// probeTimeout is how long a probe waits for a replica to see a write.
const probeTimeout = 30 * time.Second

// probeRegistry writes a tool to the restarted etcd with a client of its
// own and measures when each replica serves it (GetTool answers from the
// replica's snapshot, kept by its watch).
func probeRegistry(ctx context.Context, t testing.TB, f *Fleet, c *Callers, up time.Time) []time.Duration {
	st, err := etcdstore.New(f.Etcd.Client(t), etcdPrefix+"/registry")
	if err != nil {
		t.Fatalf("chaos: etcd store: %v", err)
	}
	name := fmt.Sprintf("probe_%d", up.UnixNano())
	schema := &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = st.Put(wctx, registry.Tool{Name: name, Backend: f.Backends[0].Addr, InputSchema: schema}, nil)
	cancel()
	if err != nil {
		t.Fatalf("chaos: write the probe tool to the restarted etcd: %v", err)
	}
	seen := make([]time.Duration, len(f.Replicas))
	for i := range seen {
		seen[i] = -1
	}
	for deadline := time.Now().Add(probeTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left := 0
		for i, conn := range c.conns {
			if seen[i] >= 0 {
				continue
			}
			gctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := gatewayv1.NewToolRegistryServiceClient(conn).GetTool(gctx, &gatewayv1.GetToolRequest{Name: name})
			cancel()
			if err == nil {
				seen[i] = time.Since(up)
			} else {
				left++
			}
		}
		if left == 0 {
			break
		}
	}
	return seen
}
