package server_test

// Rate limits shared through a real redis-server (issue 13 items 1a, 5):
// two replicas on one embedded etcd and one Redis spend one bucket; with
// Redis stopped the configured fallback decides (and is counted), and when
// Redis returns it decides again.

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// fleetTool is the tool every fleet test calls; its backend counts runs.
const fleetTool = "fleet_tool"

// fleetBackend starts one backend for every replica, running handler for
// fleetTool; it returns its address.
func fleetBackend(t *testing.T, handler demotools.HandlerFunc) string {
	t.Helper()
	blis := gatewaytest.Listen(t)
	bs := demotools.NewGRPCServer(demotools.New(demotools.WithHandler(fleetTool, handler)), nil)
	bdone := make(chan struct{})
	go func() { defer close(bdone); bs.Serve(blis) }()
	t.Cleanup(func() { bs.Stop(); <-bdone })
	return blis.Addr().String()
}

func ranFleetTool(_ context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ran " + fleetTool)}, nil
}

// fleetReplica is one gateway of a fleet: on cluster's etcd (nil: its own
// memory store), with Redis at redisAddr, serving fleetTool on backend.
type fleetReplica struct {
	name     string
	gw       gatewayv1.ToolGatewayServiceClient
	adminURL string
}

func startFleetReplica(t *testing.T, name string, cluster *etcdtest.Cluster, redisAddr, backend string, pol server.PolicyConfig, edit ...func(*server.Config)) *fleetReplica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Listeners.GRPC, cfg.Listeners.Admin = gatewaytest.Listen(t), gatewaytest.Listen(t)
	cfg.DisableFastPaths = gatewaytest.FastPathsOff()
	cfg.Tools = []registry.Tool{gatewaytest.ObjectTool(fleetTool)(backend)}
	cfg.Store.Kind = server.StoreMemory
	if cluster != nil {
		cfg.Store.Kind, cfg.Store.EtcdEndpoints, cfg.Store.EtcdRequestTimeout = server.StoreEtcd, cluster.Endpoints(), etcdCallTimeout
	}
	cfg.Redis.Addr = redisAddr
	cfg.Policy = pol
	for _, e := range edit {
		e(&cfg)
	}
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Close(sctx)
	})
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fleetReplica{name: name, gw: gatewayv1.NewToolGatewayServiceClient(conn), adminURL: "http://" + g.AdminAddr()}
}

func (r *fleetReplica) call(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := r.gw.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: fleetTool, Arguments: &structpb.Struct{}})
	return err
}

func (r *fleetReplica) fallbacks(t *testing.T, mode string) float64 {
	t.Helper()
	return sample(scrape(t, r.adminURL), "flowdrop_ratelimit_fallback_total", map[string]string{"mode": mode})
}

// limitedPolicy: the demo policy with burst 5 and a refill so slow that no
// token comes back while a test runs.
func limitedPolicy(fallback string) server.PolicyConfig {
	p := server.DemoPolicy()
	p.RateLimit = policy.RateLimitConfig{Rate: 0.001, Burst: 5, Fallback: fallback}
	return p
}

func redisKeys(t *testing.T, addr, pattern string) []string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := c.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatalf("redis KEYS: %v", err)
	}
	return keys
}

func TestRedisRateLimitIsFleetWide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := redistest.Start(t)
	cluster := etcdtest.Start(t)
	backend := fleetBackend(t, ranFleetTool)
	a := startFleetReplica(t, "A", cluster, rs.Addr(), backend, limitedPolicy(""))
	b := startFleetReplica(t, "B", cluster, rs.Addr(), backend, limitedPolicy(""))

	// 10 back-to-back calls alternating between the replicas: one bucket.
	passed := 0
	for i := range 10 {
		r := []*fleetReplica{a, b}[i%2]
		err := r.call(ctx)
		switch status.Code(err) {
		case codes.OK:
			passed++
		case codes.ResourceExhausted:
			var retry *errdetails.RetryInfo
			for _, d := range status.Convert(err).Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					retry = ri
				}
			}
			if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
				t.Errorf("call %d on %s refused without a RetryInfo delay: %v", i, r.name, err)
			}
		default:
			t.Fatalf("call %d on %s: %v; want OK or ResourceExhausted", i, r.name, err)
		}
	}
	if passed != 5 {
		t.Fatalf("%d of 10 calls across two replicas passed; want exactly 5 (burst 5, one fleet-wide bucket)", passed)
	}
	// The bucket's key is namespaced, names no caller in clear, and expires.
	keys := redisKeys(t, rs.Addr(), "flowdrop:rl:tool:*")
	if len(keys) != 1 {
		t.Fatalf("redis keys %v; want the one caller × tool bucket", keys)
	}
	c := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer c.Close()
	if ttl, err := c.PTTL(ctx, keys[0]).Result(); err != nil || ttl <= 0 {
		t.Errorf("bucket key %s has TTL %v (%v); want one, so Redis memory stays bounded", keys[0], ttl, err)
	}
}

func TestRedisRateLimitFallback(t *testing.T) {
	for _, tc := range []struct {
		name, fallback string
		reason         string
	}{
		{"local", "", "the default: each replica's own buckets limit callers while Redis is away"},
		{"deny", policy.FallbackDeny, "a limit that must hold fleet-wide refuses calls it cannot check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rs := redistest.Start(t)
			backend := fleetBackend(t, ranFleetTool)
			a := startFleetReplica(t, "A", nil, rs.Addr(), backend, limitedPolicy(tc.fallback))
			mode := tc.fallback
			if mode == "" {
				mode = policy.FallbackLocal
			}
			if n := a.fallbacks(t, mode); n != 0 {
				t.Fatalf("fallback counter before any outage = %v; want 0 (exported)", n)
			}
			if err := a.call(ctx); err != nil {
				t.Fatalf("call with Redis up: %v", err)
			}

			rs.Stop()
			if mode == policy.FallbackLocal {
				// The local bucket is full (Redis decided until now): 5 pass,
				// then the limit still holds: never unlimited.
				for i := range 5 {
					if err := a.call(ctx); err != nil {
						t.Fatalf("call %d with Redis down (local fallback): %v; want OK", i, err)
					}
				}
				if err := a.call(ctx); status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("6th call with Redis down (local fallback): %v; want ResourceExhausted (the local limit)", err)
				}
			} else {
				err := a.call(ctx)
				st := status.Convert(err)
				if st.Code() != codes.Unavailable {
					t.Fatalf("call with Redis down (deny fallback): %v; want Unavailable", err)
				}
				var info *errdetails.ErrorInfo
				var retry *errdetails.RetryInfo
				for _, d := range st.Details() {
					switch d := d.(type) {
					case *errdetails.ErrorInfo:
						info = d
					case *errdetails.RetryInfo:
						retry = d
					}
				}
				if info.GetReason() != "RATE_LIMIT_UNAVAILABLE" || retry == nil {
					t.Errorf("deny fallback details: %v, %v; want ErrorInfo RATE_LIMIT_UNAVAILABLE and a RetryInfo", info, retry)
				}
				if _, port, _ := net.SplitHostPort(rs.Addr()); strings.Contains(st.Message(), rs.Addr()) || strings.Contains(st.Message(), ":"+port) {
					t.Errorf("refusal %q names the Redis address", st.Message())
				}
			}
			if n := a.fallbacks(t, mode); n < 1 {
				t.Errorf("flowdrop_ratelimit_fallback_total{mode=%q} = %v with Redis down; want counted", mode, n)
			}

			// Redis returns (empty): within the retry interval it decides again,
			// which leaves its bucket key there.
			rs.Restart()
			err := poll(recoveryGuard, func() error {
				if err := a.call(ctx); err != nil && status.Code(err) != codes.ResourceExhausted {
					return err
				}
				if len(redisKeys(t, rs.Addr(), "flowdrop:rl:tool:*")) == 0 {
					return status.Error(codes.Unavailable, "no bucket in Redis yet")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("after Redis returned, it never decided again: %v", err)
			}
			if err := a.call(ctx); err != nil {
				t.Errorf("call after recovery: %v; want OK (a fresh fleet-wide bucket)", err)
			}
		})
	}
}

// A Redis that accepts connections and never answers delays a call by the
// command timeout, then the fallback decides: nothing hangs.
func TestRedisThatNeverAnswersFallsBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lis := gatewaytest.Listen(t)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	backend := fleetBackend(t, ranFleetTool)
	a := startFleetReplica(t, "A", nil, lis.Addr().String(), backend, limitedPolicy(""))
	start := time.Now()
	if err := a.call(ctx); err != nil {
		t.Fatalf("call with a Redis that never answers: %v; want OK (local fallback)", err)
	}
	if took, guard := time.Since(start), 4*time.Second; took > guard {
		t.Errorf("call took %v; want it decided by the fallback after the Redis timeout, well under %v", took, guard)
	}
	if n := a.fallbacks(t, policy.FallbackLocal); n < 1 {
		t.Errorf("fallback counter = %v; want counted", n)
	}
}

// The Redis password comes from a file: the right one lets Redis decide;
// a wrong one is a Redis that cannot decide (fallback, counted), and the
// password is in no log line.
func TestRedisPasswordFromFile(t *testing.T) {
	const password = "s3cret-redis-pw"
	for _, tc := range []struct {
		name, file string
		decides    bool
		reason     string
	}{
		{"right", password + "\n", true, "the file's password (trailing newline dropped) authenticates"},
		{"wrong", "not-it\n", false, "a refused AUTH means Redis cannot decide: the fallback does, counted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rs := redistest.Start(t, redistest.WithPassword(password))
			pwFile := filepath.Join(t.TempDir(), "redis.pw")
			if err := os.WriteFile(pwFile, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			backend := fleetBackend(t, ranFleetTool)
			a := startFleetReplica(t, "A", nil, rs.Addr(), backend, limitedPolicy(""), func(c *server.Config) {
				c.Redis.PasswordFile = pwFile
				c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			if err := a.call(ctx); err != nil {
				t.Fatalf("call: %v (%s)", err, tc.reason)
			}
			fell := a.fallbacks(t, policy.FallbackLocal)
			if tc.decides && fell != 0 {
				t.Errorf("fallback counter = %v; want 0: Redis decides (%s)", fell, tc.reason)
			}
			if !tc.decides && fell < 1 {
				t.Errorf("fallback counter = %v; want counted (%s)", fell, tc.reason)
			}
			if strings.Contains(logs.String(), password) || strings.Contains(logs.String(), "not-it") {
				t.Errorf("a log line holds the Redis password:\n%s", logs.String())
			}
		})
	}
}
