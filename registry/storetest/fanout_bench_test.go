package storetest_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/storetest"
)

var (
	fanoutTools  = flag.Int("fanout-tools", 100_000, "tools BenchmarkWatchFanout registers")
	fanoutParams = flag.Int("fanout-params", 1, "parameters of each tool's schema in BenchmarkWatchFanout")
)

// BenchmarkWatchFanout: three registries, each on its own client of one
// real etcd holding -fanout-tools tools (100,000), Started and warmed (every
// tool compiled: the steady state a change meets); then 20 writes through
// a fourth handle, each timed from the Put call (its commit included) until
// all three registries have published it (ms-fanout-p50, ms-fanout-max).
//
// Separate from BenchmarkRegistryScale, whose etcd run measured fan-out
// only after compiling its own 100,000 tools first: three more registries
// of its ~10-parameter schema (~62 KB a compiled tool) need ~19 GB. The
// schema here is -fanout-params parameters (default 1): a change's work
// (the snapshot's map and sorted-slice copy, one decode, one compile) does
// not depend on the other tools' schemas; the heap the GC walks does.
//
//	go test -run '^$' -bench BenchmarkWatchFanout -benchtime 1x -timeout 60m ./registry/storetest/
func BenchmarkWatchFanout(b *testing.B) {
	gatewayGC(b)
	n := *fanoutTools
	schema := storetest.Schema(*fanoutParams)
	tool := func(i int) registry.Tool {
		t := scaleTool(i)
		t.InputSchema = schema
		return t
	}
	ctx := context.Background()
	endpoints, prefix := etcdEndpoints(b, "/fanout")
	open := func() registry.Store { return openEtcdStore(b, endpoints, prefix) }
	w := open()
	defer w.Close()
	fillEtcd(b, w, n, tool)
	progress(b, "filled %d tools", n)

	var regs []*registry.Registry
	for i := range 3 {
		s := open()
		r := registry.New(s, registry.WithLogger(quiet), registry.WithLazyCompile())
		t0 := time.Now()
		if err := r.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if err := r.WaitCompiled(ctx); err != nil {
			b.Fatal(err)
		}
		progress(b, "replica %d serving and warm after %s", i, time.Since(t0))
		defer s.Close()
		defer r.Close()
		regs = append(regs, r)
	}

	for b.Loop() {
		var lat []time.Duration
		for i := range 20 {
			t := tool(i * (n / 20))
			t.Description = fmt.Sprintf("changed %d %d", i, time.Now().UnixNano())
			chans := make([]<-chan struct{}, len(regs))
			for j, r := range regs {
				ch, cancel := r.Changes()
				defer cancel()
				chans[j] = ch
			}
			t0 := time.Now()
			stored, err := w.Put(ctx, t, nil)
			if err != nil {
				b.Fatal(err)
			}
			for j, r := range regs {
				for r.Snapshot().Revision < stored.Revision {
					<-chans[j]
				}
			}
			lat = append(lat, time.Since(t0))
			if e, ok := regs[0].Lookup(t.Name); !ok || e.Tool.Description != t.Description {
				b.Fatalf("replica 0 serves %v, %v after the change", e, ok)
			}
			progress(b, "change %d seen by 3 replicas %s after the Put call", i, lat[len(lat)-1])
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-fanout-p50")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ms-fanout-max")
	}
}
