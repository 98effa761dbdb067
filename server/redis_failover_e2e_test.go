package server_test

// Redis behind Sentinel, its primary killed mid-load (issue 35 item 1):
// two replicas share one rate-limit bucket and the idempotency store
// through a primary, a replica and three Sentinels, all real redis-server
// processes on loopback.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestRedisSentinelFailover: while both replicas call the rate-limited tool
// in a closed loop, the Redis primary is killed. With rate_limit.fallback
// deny the fleet never admits more than the bucket allows — its burst, its
// refill over the run, and one more burst for a bucket whose last writes
// the promoted replica had not received (replication is asynchronous) —
// calls are refused with Unavailable (never run) until Sentinel has
// promoted the replica, and then Redis decides again, without a restart.
// An idempotency key completed before the kill survives it: the same key
// on the other replica afterwards is a replay, the tool not run again.
// The time from the kill to the first call Redis admitted again is logged.
func TestRedisSentinelFailover(t *testing.T) {
	sn := redistest.StartSentinel(t)
	const idemTool = "idem_tool"
	var idemRuns atomic.Int32
	// One backend for both tools; idemTool counts its runs.
	blis := gatewaytest.Listen(t)
	bs := demotools.NewGRPCServer(demotools.New(demotools.WithHandler(fleetTool, ranFleetTool),
		demotools.WithHandler(idemTool, func(ctx context.Context, r *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			idemRuns.Add(1)
			return ranFleetTool(ctx, r)
		})), nil)
	go bs.Serve(blis)
	t.Cleanup(bs.Stop)
	backend := blis.Addr().String()

	const rate, burst = 20.0, 20
	pol := server.DemoPolicy()
	pol.RateLimit = policy.RateLimitConfig{Rate: 1e6, Burst: 1_000_000, Fallback: "deny",
		Tools: []policy.ToolRate{{Match: fleetTool, Rate: rate, Burst: burst}}}
	sentinel := func(c *server.Config) {
		c.Redis.Mode, c.Redis.SentinelMaster = redisstate.ModeSentinel, redistest.MasterName
		c.Tools = append(c.Tools, gatewaytest.ObjectTool(idemTool)(backend))
	}
	a := startFleetReplica(t, "a", nil, sn.Addrs(), backend, pol, sentinel)
	b := startFleetReplica(t, "b", nil, sn.Addrs(), backend, pol, sentinel)

	ctx := t.Context()
	keyed := &gatewayv1.InvokeToolRequest{Tool: idemTool, Arguments: &structpb.Struct{}, IdempotencyKey: "failover-key-1"}
	if _, err := a.gw.InvokeTool(ctx, keyed); err != nil {
		t.Fatalf("the keyed call before the failover: %v", err)
	}

	type outcome struct {
		at   time.Time
		code codes.Code
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	start := time.Now()
	for _, r := range []*fleetReplica{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				began := time.Now() // a call that began before the kill may end after it
				err := r.call(ctx)
				mu.Lock()
				outcomes = append(outcomes, outcome{began, status.Code(err)})
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	killed := time.Now()
	sn.Primary.Stop()

	// Run until Redis has admitted calls again for 2 s, or a guard.
	var recovered time.Time
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		for _, o := range outcomes {
			if o.code == codes.OK && o.at.After(killed) && (recovered.IsZero() || o.at.Before(recovered)) {
				recovered = o.at
			}
		}
		mu.Unlock()
		if !recovered.IsZero() && time.Since(recovered) > 2*time.Second {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if recovered.IsZero() {
		t.Fatal("no call was admitted in the minute after the primary was killed: the fleet did not find the promoted replica")
	}

	counts := map[codes.Code]int{}
	for _, o := range outcomes {
		counts[o.code]++
	}
	for c, n := range counts {
		if c != codes.OK && c != codes.ResourceExhausted && c != codes.Unavailable {
			t.Errorf("%d calls ended %v; want only OK, ResourceExhausted (the limit) and Unavailable (Redis away, fallback deny)", n, c)
		}
	}
	bound := 2*burst + int(rate*elapsed.Seconds()+0.999)
	if counts[codes.OK] > bound {
		t.Errorf("the fleet admitted %d calls in %v; the bucket allows at most %d (2×burst %d + rate %v/s × the run)",
			counts[codes.OK], elapsed.Round(time.Millisecond), bound, burst, rate)
	}
	if counts[codes.Unavailable] == 0 {
		t.Errorf("no call was refused while the primary was away: the test did not see the failover")
	}
	t.Logf("primary killed at +%v; first call admitted by Redis again %v later; %d admitted (bound %d), %d limited, %d refused while Redis was away, over %v",
		killed.Sub(start).Round(time.Millisecond), recovered.Sub(killed).Round(time.Millisecond),
		counts[codes.OK], bound, counts[codes.ResourceExhausted], counts[codes.Unavailable], elapsed.Round(time.Millisecond))

	// b may still be skipping Redis after its last failure (it probes again
	// within a second): Unavailable runs nothing, so the caller retries.
	var resp *gatewayv1.InvokeToolResponse
	var err error
	for range 100 {
		if resp, err = b.gw.InvokeTool(ctx, keyed); status.Code(err) != codes.Unavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the keyed call after the failover: %v", err)
	}
	if !resp.GetReplayed() || idemRuns.Load() != 1 {
		t.Errorf("after the failover the key replayed=%v with %d runs; want the stored outcome, the tool run once", resp.GetReplayed(), idemRuns.Load())
	}
}
