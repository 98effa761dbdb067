package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// waitingGatewayConfig is a gateway on etcd (at endpoints) serving one tool
// from a tools file, with short etcd timeouts and retries.
func waitingGatewayConfig(t *testing.T, endpoints []string, logs io.Writer) server.Config {
	t.Helper()
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(tools, []byte(`tools:
  - name: waited_tool
    description: Registered once etcd answers.
    backend: 127.0.0.1:1
    input_schema: {type: object}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	cfg := server.DefaultConfig()
	cfg.ToolsFile, cfg.ListenAddr = tools, addr
	cfg.Store.RetryFirst, cfg.Store.RetryMax = 50*time.Millisecond, 200*time.Millisecond
	cfg.Store.Kind, cfg.Store.EtcdEndpoints = server.StoreEtcd, endpoints
	cfg.Store.EtcdDialTimeout, cfg.Store.EtcdRequestTimeout = 300*time.Millisecond, 300*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return cfg
}

// TestRunWaitsForAnUnreachableStore: started while etcd is down, the gateway
// neither exits nor serves, and says why; once etcd answers it seeds the
// tools file, loads the registry and serves — no restart needed.
func TestRunWaitsForAnUnreachableStore(t *testing.T) {
	cluster := etcdtest.Start(t)
	cluster.Stop()
	var logs syncBuffer
	cfg := waitingGatewayConfig(t, cluster.Endpoints(), &logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()

	if err := poll(10*time.Second, func() error {
		if n := strings.Count(logs.String(), "registry store unreachable"); n < 3 {
			return fmt.Errorf("%d waiting lines so far", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("no repeated waiting log while etcd is down: %v\n%s", err, logs.String())
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned while etcd was down: %v", err)
	default:
	}
	if c, err := net.DialTimeout("tcp", cfg.ListenAddr, time.Second); err == nil {
		c.Close()
		t.Fatal("the gateway listens before its registry is loaded")
	}

	cluster.Restart()
	conn, err := grpc.NewClient(cfg.ListenAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reg := gatewayv1.NewToolRegistryServiceClient(conn)
	if err := poll(recoveryGuard, func() error {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		defer ccancel()
		resp, err := reg.GetTool(cctx, &gatewayv1.GetToolRequest{Name: "waited_tool"})
		if err != nil {
			return err
		}
		if resp.GetTool().GetName() != "waited_tool" {
			return fmt.Errorf("got %v", resp.GetTool())
		}
		return nil
	}); err != nil {
		t.Fatalf("not serving the seeded tool after etcd returned: %v\n%s", err, logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after shutdown: %v", err)
	}
}

// TestRunStoppedWhileWaitingForTheStore: a shutdown while waiting is a
// normal stop (Run returns nil), not a failure.
func TestRunStoppedWhileWaitingForTheStore(t *testing.T) {
	var logs syncBuffer
	cfg := waitingGatewayConfig(t, []string{"http://127.0.0.1:1"}, &logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	if err := poll(10*time.Second, func() error {
		if !strings.Contains(logs.String(), "registry store unreachable") {
			return fmt.Errorf("not waiting yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run stopped while waiting = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
