package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestAdminAnswersWhileWaitingForTheStore: a replica started while etcd is
// down serves its admin listener at once — /healthz 200 (alive: a liveness
// probe must not kill it), /readyz 503 saying it waits for the registry
// store, /metrics with how long it has waited — and turns ready by itself
// once etcd is back.
func TestAdminAnswersWhileWaitingForTheStore(t *testing.T) {
	cluster := etcdtest.Start(t)
	cluster.Stop()
	var logs syncBuffer
	cfg := waitingGatewayConfig(t, cluster.Endpoints(), &logs)
	adminLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners.Admin = adminLis
	admin := "http://" + adminLis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()

	get := func(path string) (int, string, error) {
		c := &http.Client{Timeout: time.Second}
		resp, err := c.Get(admin + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	waitedGauge := regexp.MustCompile(`(?m)^flowdrop_registry_store_wait_seconds ([0-9.e+-]+)$`)
	waited := func() (float64, error) {
		code, body, err := get("/metrics")
		if err != nil || code != http.StatusOK {
			return 0, fmt.Errorf("/metrics: %d %v", code, err)
		}
		m := waitedGauge.FindStringSubmatch(body)
		if m == nil {
			return 0, errors.New("/metrics has no flowdrop_registry_store_wait_seconds")
		}
		return strconv.ParseFloat(m[1], 64)
	}

	// While etcd is down (it stays down until the checks below pass).
	if err := poll(10*time.Second, func() error {
		if n := strings.Count(logs.String(), "registry store unreachable"); n < 2 {
			return fmt.Errorf("%d waiting lines so far", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("not waiting for the store: %v\n%s", err, logs.String())
	}
	if code, body, err := get("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz while waiting for the store = %d %q %v; want 200", code, body, err)
	}
	if code, body, err := get("/readyz"); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the registry store") {
		t.Errorf("/readyz while waiting for the store = %d %q %v; want 503 naming the registry store", code, body, err)
	}
	if w, err := waited(); err != nil || w <= 0 {
		t.Errorf("store wait gauge while waiting = %v, %v; want > 0", w, err)
	}

	cluster.Restart()
	back := time.Now()
	if err := poll(recoveryGuard, func() error {
		if code, body, err := get("/readyz"); err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q %v", code, body, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("not ready after etcd returned: %v\n%s", err, logs.String())
	}
	t.Logf("ready %v after etcd answered again (store retries every %v at most)", time.Since(back).Round(time.Millisecond), cfg.Store.RetryMax)
	if w, err := waited(); err != nil || w != 0 {
		t.Errorf("store wait gauge once loaded = %v, %v; want 0", w, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after shutdown: %v", err)
	}
}
