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
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
	"github.com/flowdrop/gateway/registry/storetest"
)

// scaleTools is the registry size BenchmarkRegistryScale loads (issue 35:
// 100,000). Benchmarks only run under -bench; CI runs none of this.
var scaleTools = flag.Int("scale-tools", 100_000, "tools BenchmarkRegistryScale loads")

func scaleToolSet(n int) []registry.Tool {
	tools := make([]registry.Tool, n)
	for i := range tools {
		tools[i] = registry.Tool{
			Name:        fmt.Sprintf("team%03d.tool-%06d", i%997, i),
			Description: "benchmark tool with a realistic schema",
			InputSchema: storetest.Schema(10), // ~10 parameters, a schema of its own
			Backend:     "dns:///backend:9000",
			Timeout:     5 * time.Second,
			Labels:      map[string]string{"team": fmt.Sprintf("team%03d", i%997), "tier": "standard"},
		}
	}
	return tools
}

// fillBolt writes tools into a new bolt file the way boltstore stores them,
// 10,000 to a transaction: setup, not what is measured (one fsync'd Put
// each would take minutes at 100,000).
func fillBolt(b *testing.B, path string, tools []registry.Tool) {
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
	for start := 0; start < len(tools); start += 10_000 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket([]byte("tools"))
			for i := start; i < min(start+10_000, len(tools)); i++ {
				t := tools[i]
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
			binary.BigEndian.PutUint64(rev[:], uint64(min(start+10_000, len(tools))))
			return tx.Bucket([]byte("meta")).Put([]byte("revision"), rev[:])
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// fillEtcd registers the tools with 32 writers: setup.
func fillEtcd(b *testing.B, s registry.Store, tools []registry.Tool) {
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < len(tools); i += 32 {
				if _, err := s.Put(context.Background(), tools[i], nil); err != nil {
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

// progress prints a measure as it is taken (stderr): at 100,000 tools on a
// loaded machine a run takes long, and the first measures matter most.
func progress(b *testing.B, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().UTC().Format("15:04:05"), b.Name(), fmt.Sprintf(format, args...))
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkRegistryScale: a registry of -scale-tools tools (100,000) in
// bolt and in etcd, started as a restarting gateway starts it (a new store
// handle, registry.WithLazyCompile):
//
//   - s-serving: Start returning (listed, decoded, published: the gateway
//     turns SERVING here);
//
//   - ms-first-call: the first Lookup of a tool (compiling it: callable);
//
//   - s-warm: the warm-up compiling every tool on all CPUs;
//
//   - B/tool-listed, B/tool-compiled: heap in use per tool after Start and
//     after the warm-up (GC'd, minus before the store was opened);
//
//   - ms-fanout-p50/max (etcd): three registries, each on its own client of
//     the same etcd, Started; a write through a fourth handle, 20 times;
//     from the Put call (its commit included) until all three have
//     published it.
//
//     go test -run '^$' -bench BenchmarkRegistryScale -benchtime 1x -timeout 60m ./registry/storetest/
func BenchmarkRegistryScale(b *testing.B) {
	n := *scaleTools
	tools := scaleToolSet(n)
	ctx := context.Background()

	start := func(b *testing.B, open func() registry.Store) {
		before := heapInUse()
		for b.Loop() {
			s := open()
			r := registry.New(s, registry.WithLogger(quiet), registry.WithLazyCompile())
			t0 := time.Now()
			if err := r.Start(ctx); err != nil {
				b.Fatal(err)
			}
			serving := time.Since(t0)
			progress(b, "serving after %s", serving)
			if got := r.Snapshot().Len(); got != n {
				b.Fatalf("serving %d tools, want %d", got, n)
			}
			listed := heapInUse()
			t1 := time.Now()
			if e, ok := r.Lookup(tools[n/2].Name); !ok || e.Schema == nil {
				b.Fatalf("Lookup(%s) = %v, %v", tools[n/2].Name, e, ok)
			}
			first := time.Since(t1)
			progress(b, "first call compiled in %s; heap in use %d B a tool listed", first, (int64(listed)-int64(before))/int64(n))
			if err := r.WaitCompiled(ctx); err != nil {
				b.Fatal(err)
			}
			warm := time.Since(t0)
			progress(b, "warm-up done %s after the start", warm)
			if got := r.Snapshot().Len(); got != n {
				b.Fatalf("%d tools after the warm-up, want %d", got, n)
			}
			compiled := heapInUse()
			b.ReportMetric(serving.Seconds(), "s-serving")
			b.ReportMetric(float64(first.Microseconds())/1000, "ms-first-call")
			b.ReportMetric(warm.Seconds(), "s-warm")
			b.ReportMetric(float64(int64(listed)-int64(before))/float64(n), "B/tool-listed")
			b.ReportMetric(float64(int64(compiled)-int64(before))/float64(n), "B/tool-compiled")
			_ = r.Close()
			_ = s.Close()
		}
	}

	b.Run(fmt.Sprintf("bolt-%d", n), func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "registry.db")
		fillBolt(b, path, tools)
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
		cluster := etcdtest.Start(b)
		open := func() registry.Store {
			cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			s, err := etcdstore.New(cli, "/scale", etcdstore.WithTimeout(5*time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			return clientStore{s, cli}
		}
		w := open()
		defer w.Close()
		fillEtcd(b, w, tools)
		progress(b, "filled")
		start(b, open)

		// Fan-out: three replicas see one write.
		var regs []*registry.Registry
		for range 3 {
			s := open()
			r := registry.New(s, registry.WithLogger(quiet), registry.WithLazyCompile())
			if err := r.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			defer r.Close()
			regs = append(regs, r)
		}
		var lat []time.Duration
		for i := range 20 {
			t := tools[i*(n/20)]
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
