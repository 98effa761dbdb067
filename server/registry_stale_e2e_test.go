package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// gauge returns the value of the unlabelled gauge name on env's /metrics; -1
// if absent.
func gauge(t *testing.T, adminURL, name string) float64 {
	t.Helper()
	f := scrape(t, adminURL)[name]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
		return -1
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

// TestRegistryStalenessDuringEtcdOutage: a real embedded etcd is stopped
// under a gateway and restarted. While it is down the gateway says so — a
// WARN line, flowdrop_registry_stale_seconds growing — and keeps answering
// GetTool and ListTools from its snapshot; when etcd returns, an INFO line
// and the gauge back at 0.
func TestRegistryStalenessDuringEtcdOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster := etcdtest.Start(t)
	var logs syncBuffer
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.Listeners.GRPC, cfg.Listeners.Admin = gatewaytest.Listen(t), gatewaytest.Listen(t)
	cfg.Store.Kind, cfg.Store.EtcdEndpoints, cfg.Store.EtcdRequestTimeout = server.StoreEtcd, cluster.Endpoints(), etcdCallTimeout
	cfg.RegistryOptions = []registry.Option{registry.WithBackoff(20*time.Millisecond, 200*time.Millisecond),
		registry.WithStaleProbe(50 * time.Millisecond)}
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Close(sctx)
	})
	admin := "http://" + g.AdminAddr()
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reg := gatewayv1.NewToolRegistryServiceClient(conn)
	call := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		t.Cleanup(cancel)
		return c
	}
	if _, err := reg.RegisterTool(call(), &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{
		Name: "kept_tool", Backend: gatewaytest.ClosedAddr(t),
		InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
	}}); err != nil {
		t.Fatal(err)
	}
	if v := gauge(t, admin, "flowdrop_registry_stale_seconds"); v != 0 {
		t.Fatalf("stale gauge with etcd up = %v, want 0", v)
	}

	cluster.Stop()
	var first float64
	if err := poll(recoveryGuard, func() error {
		if first = gauge(t, admin, "flowdrop_registry_stale_seconds"); first <= 0 {
			return fmt.Errorf("stale gauge = %v with etcd down, want > 0", first)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := poll(recoveryGuard, func() error {
		if v := gauge(t, admin, "flowdrop_registry_stale_seconds"); v <= first {
			return fmt.Errorf("stale gauge %v did not grow past %v while etcd is down", v, first)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "store unreachable; serving the last snapshot") {
		t.Errorf("no WARN line for the outage:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "store unreachable; serving the last snapshot"); n != 1 {
		t.Errorf("outage WARN logged %d times, want once per outage", n)
	}
	got, err := reg.GetTool(call(), &gatewayv1.GetToolRequest{Name: "kept_tool"})
	if err != nil || got.GetTool().GetName() != "kept_tool" {
		t.Errorf("GetTool with etcd down = %v, %v; want it answered from the snapshot", got, err)
	}
	if _, err := reg.GetTool(call(), &gatewayv1.GetToolRequest{Name: "never_registered"}); err == nil {
		t.Error("GetTool of an unknown tool answered with etcd down")
	}
	if list, err := reg.ListTools(call(), &gatewayv1.ListToolsRequest{}); err != nil || len(list.GetTools()) != 1 {
		t.Errorf("ListTools with etcd down = %v, %v; want the snapshot", list, err)
	}

	cluster.Restart()
	if err := poll(recoveryGuard, func() error {
		if v := gauge(t, admin, "flowdrop_registry_stale_seconds"); v != 0 {
			return fmt.Errorf("stale gauge = %v after etcd returned, want 0", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "store reachable again") {
		t.Errorf("no INFO line for the recovery:\n%s", logs.String())
	}
}
