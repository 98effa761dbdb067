package storetest_test

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
	"github.com/flowdrop/gateway/registry/storetest"
)

// scaleEtcd names a running etcd (comma-separated client URLs) for the
// etcd benchmarks instead of an embedded member: with a separate server
// process (e.g. Debian's etcd-server) the measured CPU is the gateway's
// alone, as in a deployment where etcd runs elsewhere. Each run writes under
// a fresh prefix and deletes it at the end.
var scaleEtcd = flag.String("scale-etcd-endpoints", "", "etcd client URLs for the etcd benchmarks (default: an embedded member)")

// etcdEndpoints is -scale-etcd-endpoints, or an embedded member's, and a
// prefix no earlier run wrote under.
func etcdEndpoints(b *testing.B, prefix string) ([]string, string) {
	if *scaleEtcd == "" {
		return etcdtest.Start(b).Endpoints(), prefix
	}
	eps := strings.Split(*scaleEtcd, ",")
	prefix = fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	b.Cleanup(func() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Compacted too: until then etcd keeps every deleted key in its
		// index, and the next benchmark's writes walk them (a 100,000-tool
		// fill after one took minutes instead of seconds).
		if resp, err := cli.Delete(ctx, prefix+"/", clientv3.WithPrefix()); err == nil {
			_, _ = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
		}
	})
	return eps, prefix
}

// scaleGCPercent is the collector's target during the scale benchmarks:
// the gateway's --gc-percent default (cmd/flowdrop-gateway/gc.go), so a
// cold load is measured as a gateway runs it; Go's 100 spends ~2 CPU-s more
// marking the growing heap at 100,000 tools.
var scaleGCPercent = flag.Int("scale-gc-percent", 400, "the collector's target (GOGC) during the scale benchmarks; the gateway's default")

// gatewayGC sets -scale-gc-percent until the benchmark ends.
func gatewayGC(b *testing.B) {
	prev := debug.SetGCPercent(*scaleGCPercent)
	b.Cleanup(func() { debug.SetGCPercent(prev) })
}

// scaleTools is the registry size BenchmarkRegistryScale loads (issue 35:
// 100,000). Benchmarks only run under -bench; CI runs none of this.
var scaleTools = flag.Int("scale-tools", 100_000, "tools BenchmarkRegistryScale loads")

// scaleShared makes every tool's schema byte-identical (stores then decode
// it once: toolcodec.Loader); by default each tool's schema differs (its
// own description), the worst case for a load.
var scaleShared = flag.Bool("scale-shared-schemas", false, "BenchmarkRegistryScale: one schema for every tool")

// scaleWarm: compile every tool after the start (s-warm, B/tool-compiled);
// minutes at 100,000 on two CPUs.
var scaleWarm = flag.Bool("scale-warm", true, "BenchmarkRegistryScale: compile every tool after the start")

// scaleSchema is the ~10-parameter schema every tool's is a copy of.
var scaleSchema = storetest.Schema(10)

// scaleTool is the i-th tool of the benchmark's registry, made when needed:
// 100,000 decoded schemas held as the benchmark's own would weigh more than
// the registry measured.
func scaleTool(i int) registry.Tool {
	s := scaleSchema
	if !*scaleShared {
		s = proto.Clone(scaleSchema).(*structpb.Struct)
		s.Fields["description"] = structpb.NewStringValue(fmt.Sprintf("the arguments of tool %d", i))
	}
	return registry.Tool{
		Name:        fmt.Sprintf("team%03d.tool-%06d", i%997, i),
		Description: "benchmark tool with a realistic schema",
		InputSchema: s,
		Backend:     "dns:///backend:9000",
		Timeout:     5 * time.Second,
		Labels:      map[string]string{"team": fmt.Sprintf("team%03d", i%997), "tier": "standard"},
	}
}

// fillBolt writes tools into a new bolt file the way boltstore stores them,
// 10,000 to a transaction: setup, not what is measured (one fsync'd Put
// each would take minutes at 100,000).
func fillBolt(b *testing.B, path string, n int) {
	s, err := boltstore.Open(path) // creates the buckets
	if err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for start := 0; start < n; start += 10_000 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket([]byte("tools"))
			for i := start; i < min(start+10_000, n); i++ {
				t := scaleTool(i)
				t.Revision = int64(i + 1)
				v, err := toolcodec.Encode(t)
				if err != nil {
					return err
				}
				if err := bk.Put([]byte(t.Name), v); err != nil {
					return err
				}
			}
			var rev [8]byte
			binary.BigEndian.PutUint64(rev[:], uint64(min(start+10_000, n)))
			return tx.Bucket([]byte("meta")).Put([]byte("revision"), rev[:])
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// openEtcdStore is an etcd store under prefix on a client of its own (a
// replica's), closed with the store; its timeout fits a 100,000-tool list.
func openEtcdStore(b *testing.B, endpoints []string, prefix string) registry.Store {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	s, err := etcdstore.New(cli, prefix, etcdstore.WithTimeout(5*time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	return clientStore{s, cli}
}

// fillEtcd registers tool(0) … tool(n-1) with 32 writers: setup.
func fillEtcd(b *testing.B, s registry.Store, n int, tool func(int) registry.Tool) {
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				if _, err := s.Put(context.Background(), tool(i), nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// progress prints a measure as it is taken (stderr), with the load
// average: at 100,000 tools on a loaded machine a run takes long, and the
// first measures matter most.
func progress(b *testing.B, format string, args ...any) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "%s %s: %s (load %s)\n", time.Now().UTC().Format("15:04:05"), b.Name(), fmt.Sprintf(format, args...), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
}

// heapAlloc is the heap's live bytes after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cpuTime is the process's CPU time so far (user + system): what a load
// costs, unlike its wall time, barely depends on what else the machine runs.
// With embedded etcd it includes the etcd server's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkRegistryScale: a registry of -scale-tools tools (100,000) in
// bolt and in etcd, started as a restarting gateway starts it (a new store
// handle, registry.WithLazyCompile), with the warm-up left out
// (registry.WithoutWarmUp) so the heap can be read before any compile and
// the warm-up's cost is the benchmark's own (every tool looked up on all
// CPUs, as the warm-up does):
//
//   - s-serving, cpu-s-serving, allocs-serving: Start returning (listed,
//     decoded, published: the gateway turns SERVING here) — wall time, CPU
//     time of the process (user+sys; with etcd, the embedded server's
//     too), and heap allocations;
//
//   - B/tool-listed: HeapAlloc after Start and a forced GC, minus before
//     the store was opened, per tool;
//
//   - ms-first-call: the first Lookup of a tool (compiling it: callable);
//
//   - s-warm, cpu-s-warm: every tool compiled;
//
//   - B/tool-compiled: as B/tool-listed, after every tool is compiled;
//
//   - ms-fanout-p50/max (etcd): three registries, each on its own client of
//     the same etcd, Started; a write through a fourth handle, 20 times;
//     from the Put call (its commit included) until all three have
//     published it.
//
//     go test -run '^$' -bench BenchmarkRegistryScale -benchtime 1x -timeout 60m ./registry/storetest/
func BenchmarkRegistryScale(b *testing.B) {
	gatewayGC(b)
	n := *scaleTools
	ctx := context.Background()
	lazy := []registry.Option{registry.WithLogger(quiet), registry.WithLazyCompile(), registry.WithoutWarmUp()}

	start := func(b *testing.B, open func() registry.Store) {
		before := heapAlloc()
		for b.Loop() {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			c0, t0 := cpuTime(), time.Now()
			s := open()
			r := registry.New(s, lazy...)
			if err := r.Start(ctx); err != nil {
				b.Fatal(err)
			}
			serving, cpuServing := time.Since(t0), cpuTime()-c0
			runtime.ReadMemStats(&m1)
			if got := r.Snapshot().Len(); got != n {
				b.Fatalf("serving %d tools, want %d", got, n)
			}
			listed := heapAlloc()
			progress(b, "serving after %s wall, %s CPU, %d allocations (%d B); heap %d B a tool listed",
				serving, cpuServing, m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc, (int64(listed)-int64(before))/int64(n))
			t1 := time.Now()
			name := scaleTool(n / 2).Name
			if e, ok := r.Lookup(name); !ok || e.Schema == nil {
				b.Fatalf("Lookup(%s) = %v, %v", name, e, ok)
			}
			first := time.Since(t1)
			progress(b, "first call compiled in %s", first)
			b.ReportMetric(serving.Seconds(), "s-serving")
			b.ReportMetric(cpuServing.Seconds(), "cpu-s-serving")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs), "allocs-serving")
			b.ReportMetric(float64(first.Microseconds())/1000, "ms-first-call")
			b.ReportMetric(float64(int64(listed)-int64(before))/float64(n), "B/tool-listed")
			if !*scaleWarm {
				_ = r.Close()
				_ = s.Close()
				continue
			}
			c2, t2 := cpuTime(), time.Now()
			entries := r.Snapshot().List()
			var (
				next atomic.Int64
				wg   sync.WaitGroup
			)
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for i := int(next.Add(1)) - 1; i < len(entries); i = int(next.Add(1)) - 1 {
						if _, ok := r.Lookup(entries[i].Tool.Name); !ok {
							b.Errorf("%s does not compile", entries[i].Tool.Name)
						}
					}
				})
			}
			wg.Wait()
			warm, cpuWarm := time.Since(t2), cpuTime()-c2
			compiled := heapAlloc()
			progress(b, "every tool compiled after %s wall, %s CPU; heap %d B a tool compiled", warm, cpuWarm, (int64(compiled)-int64(before))/int64(n))
			b.ReportMetric(warm.Seconds(), "s-warm")
			b.ReportMetric(cpuWarm.Seconds(), "cpu-s-warm")
			b.ReportMetric(float64(int64(compiled)-int64(before))/float64(n), "B/tool-compiled")
			entries = nil
			_ = r.Close()
			_ = s.Close()
		}
	}

	b.Run(fmt.Sprintf("bolt-%d", n), func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "registry.db")
		fillBolt(b, path, n)
		progress(b, "filled")
		start(b, func() registry.Store {
			s, err := boltstore.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			return s
		})
	})

	b.Run(fmt.Sprintf("etcd-%d", n), func(b *testing.B) {
		endpoints, prefix := etcdEndpoints(b, "/scale")
		open := func() registry.Store { return openEtcdStore(b, endpoints, prefix) }
		w := open()
		defer w.Close()
		fillEtcd(b, w, n, scaleTool)
		progress(b, "filled")
		start(b, open)

		// Fan-out: three replicas see one write.
		var regs []*registry.Registry
		for range 3 {
			s := open()
			r := registry.New(s, lazy...)
			if err := r.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			defer r.Close()
			regs = append(regs, r)
		}
		var lat []time.Duration
		for i := range 20 {
			t := scaleTool(i * (n / 20))
			t.Description = fmt.Sprintf("changed %d", i)
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
			put := time.Since(t0)
			t0 = time.Now()
			for j, r := range regs {
				for r.Snapshot().Revision < stored.Revision {
					<-chans[j]
				}
			}
			lat = append(lat, time.Since(t0)+put)
			progress(b, "change %d seen by 3 replicas %s after the Put call", i, lat[len(lat)-1])
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-fanout-p50")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ms-fanout-max")
	})
}
