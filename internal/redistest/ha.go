package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a primary, one replica and three Sentinels (quorum 2)
// monitoring the primary as MasterName, on loopback. A failover takes
// about a second after the primary stops answering (down-after 1 s).
type Sentinel struct {
	Primary, Replica *Server
	Sentinels        []*Server
}

// MasterName is the name the Sentinels monitor the primary under.
const MasterName = "flowdrop"

// StartSentinel starts the set and waits until the replica has synced and
// every Sentinel knows the replica and the other Sentinels, so a failover
// can happen and keeps what was written.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	// No delay before the replica's first sync (Redis waits 5 s by default
	// for more replicas): the set is ready when the replica holds the data.
	primary := Start(t, WithArgs("--repl-diskless-sync-delay", "0"))
	replica := Start(t, WithArgs("--replicaof", "127.0.0.1", portOf(primary)))
	sn := &Sentinel{Primary: primary, Replica: replica}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 10000\n"+
		"sentinel parallel-syncs %[1]s 1\n", MasterName, portOf(primary))
	for range 3 {
		sn.Sentinels = append(sn.Sentinels, Start(t, withConfig(conf), WithArgs("--sentinel")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The replica has finished its first sync (a failover before it would
	// promote an empty server).
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && !strings.Contains(info, "master_sync_in_progress:1") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("redistest: the replica %s did not sync with the primary: %v %s", replica.Addr(), err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc.Close()
	for _, s := range sn.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		for {
			m, err := c.Master(ctx, MasterName).Result()
			if err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("redistest: sentinel %s does not see the set: %v %v", s.Addr(), m, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return sn
}

// Addrs is the Sentinels' addresses, comma-separated (the gateway's
// --redis-addr in mode sentinel).
func (sn *Sentinel) Addrs() string {
	var a []string
	for _, s := range sn.Sentinels {
		a = append(a, s.Addr())
	}
	return strings.Join(a, ",")
}

// PrimaryAddr asks a Sentinel which server is the primary now.
func (sn *Sentinel) PrimaryAddr(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Sentinels[0].Addr()})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	return a[0] + ":" + a[1], nil
}

// Cluster is a Redis Cluster of three primaries on loopback, the slots
// split evenly, no replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts three cluster-enabled servers, joins them with
// redis-cli --cluster create and waits for cluster_state:ok on each.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redistest: redis-cli is not on PATH (it comes with redis-server's package, redis-tools)")
	}
	cl := &Cluster{}
	for range 3 {
		cl.Nodes = append(cl.Nodes, Start(t, WithArgs("--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")))
	}
	args := []string{"--cluster", "create"}
	for _, n := range cl.Nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range cl.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("redistest: cluster node %s not ok: %v %s", n.Addr(), err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return cl
}

// Addrs is the nodes' addresses, comma-separated (the gateway's
// --redis-addr in mode cluster).
func (cl *Cluster) Addrs() string {
	var a []string
	for _, n := range cl.Nodes {
		a = append(a, n.Addr())
	}
	return strings.Join(a, ",")
}

func portOf(s *Server) string { return fmt.Sprint(s.port) }
