package etcdstore_test

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/etcdstore"
)

// TestHistoryKeysBounded checks what etcd holds, not what History reads:
// every write past registry.HistoryDepth drops the oldest key in its own
// transaction.
func TestHistoryKeysBounded(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	s, err := etcdstore.New(cli, "/bound")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for range registry.HistoryDepth + 7 {
		if _, err := s.Put(ctx, registry.Tool{Name: "t"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Get(ctx, "/bound/versions/t/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != registry.HistoryDepth {
		t.Fatalf("etcd holds %d history keys after %d writes, want %d", resp.Count, registry.HistoryDepth+7, registry.HistoryDepth)
	}
}
