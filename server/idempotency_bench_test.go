package server_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
)

// BenchmarkInvokeToolIdempotency is the per-call cost of an idempotency
// key against no key, for the memory store and Redis (a real
// redis-server on loopback), all in one run (BENCHMARKS.md):
//   - no-key: BenchmarkInvokeTool's clean call;
//   - fresh-key: a new key per call (claim, run, store the outcome);
//   - replayed: one key, every call after the first answered from the store.
//
// fresh-key's client builds a key per call (one strconv allocation on the
// client side, counted in its allocs/op).
func BenchmarkInvokeToolIdempotency(b *testing.B) {
	rs := redistest.Start(b)
	envs := []struct {
		store string
		env   *gatewaytest.Env
	}{
		{"memory", gatewaytest.Start(b, gatewaytest.WithoutRecording())},
		{"redis", gatewaytest.Start(b, gatewaytest.WithoutRecording(), gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() }))},
	}
	args := gatewaytest.Args(b, map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "hello"})
	var seq atomic.Int64
	for _, e := range envs {
		for _, mode := range []string{"no-key", "fresh-key", "replayed"} {
			b.Run(e.store+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args, CallId: "bench"}
					if mode == "replayed" {
						req.IdempotencyKey = "bench-replayed"
					}
					for pb.Next() {
						r := req
						if mode == "fresh-key" {
							r = &gatewayv1.InvokeToolRequest{Tool: req.Tool, Arguments: args, CallId: req.CallId,
								IdempotencyKey: "bench-" + strconv.FormatInt(seq.Add(1), 10)}
						}
						resp, err := e.env.Client.InvokeTool(ctx, r)
						if err != nil {
							b.Error(err)
							return
						}
						_ = resp
					}
				})
			})
		}
	}
}
