package storetest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/storetest"
)

// benchTools is the size issue 4 asks for. Benchmarks only run under -bench.
const benchTools = 10_000

func benchToolSet() []registry.Tool {
	schema := storetest.Schema(10) // a realistic ~10-parameter schema
	tools := make([]registry.Tool, benchTools)
	for i := range tools {
		tools[i] = registry.Tool{
			Name:        fmt.Sprintf("tool-%05d", i),
			Description: "benchmark tool with a realistic schema",
			InputSchema: schema,
			Backend:     "dns:///backend:9000",
			Timeout:     5 * time.Second,
			Labels:      map[string]string{"team": "bench", "tier": "standard"},
		}
	}
	return tools
}

// backend opens fresh stores and reopens an existing one "cold" (a new
// handle with no cached state, as a restarting gateway would).
type backend struct {
	fresh func(b *testing.B) (s registry.Store, reopen func() registry.Store)
}

func boltBackend(b *testing.B) backend {
	return backend{fresh: func(b *testing.B) (registry.Store, func() registry.Store) {
		path := filepath.Join(b.TempDir(), "registry.db")
		s, err := boltstore.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return s, func() registry.Store {
			s, err := boltstore.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
	}}
}

type clientStore struct {
	*etcdstore.Store
	cli *clientv3.Client
}

func (c clientStore) Close() error {
	_ = c.Store.Close()
	return c.cli.Close()
}

func etcdBackend(b *testing.B) backend {
	cluster := etcdtest.Start(b)
	n := 0
	open := func(prefix string) registry.Store {
		cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		s, err := etcdstore.New(cli, prefix, etcdstore.WithTimeout(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		return clientStore{s, cli}
	}
	return backend{fresh: func(b *testing.B) (registry.Store, func() registry.Store) {
		n++
		prefix := fmt.Sprintf("/bench/%d", n)
		return open(prefix), func() registry.Store { return open(prefix) }
	}}
}

// fill registers the tools concurrently: setup, not what is measured.
func fill(b *testing.B, s registry.Store, tools []registry.Tool) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < len(tools); i += 16 {
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

func listAll(b *testing.B, s registry.Store) {
	got, _, err := s.List(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if len(got) != benchTools {
		b.Fatalf("List returned %d tools, want %d", len(got), benchTools)
	}
}

// BenchmarkStore: register (one Put after another, each durable), list, and
// cold-load (open a new store handle, List and decode every tool).
//
//	go test -run '^$' -bench 'BenchmarkStore' -benchtime 3x ./registry/storetest/
func BenchmarkStore(b *testing.B) {
	tools := benchToolSet()
	for _, bk := range []struct {
		name string
		new  func(*testing.B) backend
	}{{"bolt", boltBackend}, {"etcd", etcdBackend}} {
		b.Run(bk.name, func(b *testing.B) {
			be := bk.new(b)
			parent := b // stores live in the parent's temp dir: cold-load reopens them
			// The store the last register iteration filled is reused by list
			// and cold-load, so the 10,000 durable writes are not paid twice.
			var (
				s      registry.Store
				reopen func() registry.Store
			)
			b.Run(fmt.Sprintf("register-%d", benchTools), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					if s != nil {
						_ = s.Close()
					}
					s, reopen = be.fresh(parent)
					b.StartTimer()
					for _, t := range tools {
						if _, err := s.Put(context.Background(), t, nil); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchTools), "ns/tool")
			})
			if s == nil { // register was filtered out by -bench
				s, reopen = be.fresh(parent)
				fill(b, s, tools)
			}
			b.Run(fmt.Sprintf("list-%d", benchTools), func(b *testing.B) {
				for b.Loop() {
					listAll(b, s)
				}
			})
			_ = s.Close()
			b.Run(fmt.Sprintf("cold-load-%d", benchTools), func(b *testing.B) {
				for b.Loop() {
					c := reopen()
					listAll(b, c)
					_ = c.Close()
				}
			})
		})
	}
}
