package server_test

// Two gateway replicas on one real embedded etcd (issue 4 §5): what is
// registered or deleted on one is served or refused by the other within a
// second; with etcd down both keep serving from their snapshot and refuse
// writes cleanly; when etcd returns both catch up.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// Issue 4's propagation bound between replicas, and the polling step.
const (
	propagation = time.Second
	pollStep    = 20 * time.Millisecond
	// etcdCallTimeout keeps refused writes quick while etcd is down.
	etcdCallTimeout = 500 * time.Millisecond
	// recoveryGuard bounds catching up after etcd restarts: the client
	// reconnects with its own backoff. A guard against hanging, not a speed claim.
	recoveryGuard = 20 * time.Second
)

// replica is one gateway with its own etcd client, store and registry.
type replica struct {
	name string
	gw   gatewayv1.ToolGatewayServiceClient
	reg  gatewayv1.ToolRegistryServiceClient
	hc   healthpb.HealthClient
}

func startReplica(t *testing.T, name string, cluster *etcdtest.Cluster) *replica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.DefaultConfig()
	cfg.Logger = quiet
	cfg.Listeners.GRPC = gatewaytest.Listen(t)
	cfg.Store.Kind, cfg.Store.EtcdEndpoints, cfg.Store.EtcdRequestTimeout = server.StoreEtcd, cluster.Endpoints(), etcdCallTimeout
	// A small backoff cap so a replica re-lists soon after etcd returns.
	cfg.RegistryOptions = []registry.Option{registry.WithBackoff(20*time.Millisecond, 200*time.Millisecond)}
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Close(sctx)
	})
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &replica{
		name: name,
		gw:   gatewayv1.NewToolGatewayServiceClient(conn),
		reg:  gatewayv1.NewToolRegistryServiceClient(conn),
		hc:   healthpb.NewHealthClient(conn),
	}
}

// invoke calls tool on r and checks the backend really ran it.
func (r *replica) invoke(ctx context.Context, tool string) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := r.gw.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: &structpb.Struct{}})
	if err != nil {
		return err
	}
	if got := resp.GetResult().GetStringValue(); got != "ran "+tool {
		return status.Errorf(codes.Internal, "replica %s: %s returned %q", r.name, tool, got)
	}
	return nil
}

func (r *replica) register(ctx context.Context, tool, backend string) (*gatewayv1.RegisterToolResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return r.reg.RegisterTool(cctx, &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{
		Name: tool, Backend: backend, Description: "replica test tool",
		InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
	}})
}

// poll runs try every pollStep until it returns nil or within has passed;
// it returns the last error (nil on success).
func poll(within time.Duration, try func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollStep)
	}
}

func TestReplicasShareRegistryThroughEtcd(t *testing.T) {
	// Bounds the whole test (it includes an etcd outage and recovery); each
	// call has its own shorter deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster := etcdtest.Start(t)

	// One backend serves every tool the test registers, echoing its name.
	ran := func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ran " + req.GetTool())}, nil
	}
	var opts []demotools.Option
	for _, name := range []string{"shared_tool", "kept_tool", "outage_tool", "after_outage", "from_b"} {
		opts = append(opts, demotools.WithHandler(name, ran))
	}
	blis := gatewaytest.Listen(t)
	bs := demotools.NewGRPCServer(demotools.New(opts...), nil)
	bdone := make(chan struct{})
	go func() { defer close(bdone); bs.Serve(blis) }()
	t.Cleanup(func() { bs.Stop(); <-bdone })
	backend := blis.Addr().String()

	a := startReplica(t, "A", cluster)
	b := startReplica(t, "B", cluster)

	for _, r := range []*replica{a, b} {
		for _, svc := range []string{gatewayv1.ToolGatewayService_ServiceDesc.ServiceName, gatewayv1.ToolRegistryService_ServiceDesc.ServiceName} {
			resp, err := r.hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("replica %s: health of %s = %v, %v; want SERVING after the registry's first load", r.name, svc, resp.GetStatus(), err)
			}
		}
	}

	// Registered on A → invocable on B within a second.
	if err := b.invoke(ctx, "shared_tool"); status.Code(err) != codes.NotFound {
		t.Fatalf("B before registration: %v; want NotFound", err)
	}
	if _, err := a.register(ctx, "shared_tool", backend); err != nil {
		t.Fatalf("RegisterTool on A: %v", err)
	}
	if err := poll(propagation, func() error { return b.invoke(ctx, "shared_tool") }); err != nil {
		t.Fatalf("a tool registered on A is not invocable on B within %v: %v", propagation, err)
	}

	// Deleted on A → refused on B within a second.
	if _, err := a.reg.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "shared_tool"}); err != nil {
		t.Fatalf("DeleteTool on A: %v", err)
	}
	err := poll(propagation, func() error {
		if err := b.invoke(ctx, "shared_tool"); status.Code(err) != codes.NotFound {
			return status.Errorf(codes.Internal, "B still answers %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a tool deleted on A is not refused (NotFound) by B within %v: %v", propagation, err)
	}

	// etcd goes away: both keep serving what they had.
	if _, err := a.register(ctx, "kept_tool", backend); err != nil {
		t.Fatalf("RegisterTool on A: %v", err)
	}
	if err := poll(propagation, func() error { return b.invoke(ctx, "kept_tool") }); err != nil {
		t.Fatalf("kept_tool not on B: %v", err)
	}
	cluster.Stop()

	for _, r := range []*replica{a, b} {
		if err := r.invoke(ctx, "kept_tool"); err != nil {
			t.Errorf("replica %s with etcd stopped: InvokeTool = %v; want served from its snapshot", r.name, err)
		}
	}
	// Writes are refused, promptly, without the store's internals.
	start := time.Now()
	_, err = a.register(ctx, "outage_tool", backend)
	took := time.Since(start)
	if st := status.Convert(err); st.Code() != codes.Unavailable ||
		st.Message() != "registry store unavailable; try again later" {
		t.Errorf("RegisterTool with etcd stopped = %v; want Unavailable \"registry store unavailable; try again later\"", err)
	}
	// The refusal comes from the per-call timeout (a Get and at most a Put),
	// not from the 10 s client deadline: nothing hangs.
	if guard := 5 * time.Second; took > guard {
		t.Errorf("RegisterTool with etcd stopped took %v; want it refused by the store's call timeout (%v per call), well under %v", took, etcdCallTimeout, guard)
	}
	_, err = b.reg.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "kept_tool"})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("DeleteTool on B with etcd stopped = %v; want Unavailable", err)
	}
	// Still serving after the watch has been failing for a while.
	for _, r := range []*replica{a, b} {
		if err := r.invoke(ctx, "kept_tool"); err != nil {
			t.Errorf("replica %s after failed writes: InvokeTool = %v; want still served", r.name, err)
		}
		if err := r.invoke(ctx, "outage_tool"); status.Code(err) != codes.NotFound {
			t.Errorf("replica %s: refused registration is invocable (%v); want NotFound", r.name, err)
		}
	}

	// etcd returns: writes work again on both and reach the other replica.
	cluster.Restart()
	if err := poll(recoveryGuard, func() error { _, err := a.register(ctx, "after_outage", backend); return err }); err != nil {
		t.Fatalf("RegisterTool on A after etcd restarted: %v", err)
	}
	if err := poll(recoveryGuard, func() error { return b.invoke(ctx, "after_outage") }); err != nil {
		t.Fatalf("a tool registered on A after etcd restarted never reached B: %v", err)
	}
	if err := poll(recoveryGuard, func() error { _, err := b.register(ctx, "from_b", backend); return err }); err != nil {
		t.Fatalf("RegisterTool on B after etcd restarted: %v", err)
	}
	if err := poll(recoveryGuard, func() error { return a.invoke(ctx, "from_b") }); err != nil {
		t.Fatalf("a tool registered on B after etcd restarted never reached A: %v", err)
	}
	for _, r := range []*replica{a, b} {
		if err := r.invoke(ctx, "kept_tool"); err != nil {
			t.Errorf("replica %s after recovery: kept_tool = %v", r.name, err)
		}
	}
}
