package etcdstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/etcdstore"
	"github.com/flowdrop/gateway/registry/storetest"
)

func TestContract(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) registry.Store {
		// One etcd for the suite; a prefix per test keeps the stores apart.
		s, err := etcdstore.New(cli, fmt.Sprintf("/contract/%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestContractSmallPages runs the contract with one tool per List page and
// a one-event watch buffer, so List's paging at one revision and a watch
// that cannot run ahead of its reader are exercised as well.
func TestContractSmallPages(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) registry.Store {
		s, err := etcdstore.New(cli, fmt.Sprintf("/contract-small/%d", n.Add(1)), etcdstore.WithPageSize(1), etcdstore.WithWatchBuffer(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
