package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// bundleReplica is a gateway on etcd with both faces.
type bundleReplica struct {
	reg    gatewayv1.ToolRegistryServiceClient
	mcpURL string
}

func startBundleReplica(t *testing.T, cluster *etcdtest.Cluster) *bundleReplica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Listeners.GRPC, cfg.Listeners.MCP = gatewaytest.Listen(t), gatewaytest.Listen(t)
	cfg.Store.Kind, cfg.Store.EtcdEndpoints, cfg.Store.EtcdRequestTimeout = server.StoreEtcd, cluster.Endpoints(), etcdCallTimeout
	cfg.RegistryOptions = []registry.Option{registry.WithBackoff(20*time.Millisecond, 200*time.Millisecond)}
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
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
	return &bundleReplica{reg: gatewayv1.NewToolRegistryServiceClient(conn), mcpURL: g.MCPURL()}
}

// mcpBundleTools is tools/list on the bundle's endpoint of r, or an error
// (the endpoint's 404 included).
func (r *bundleReplica) mcpBundleTools(t *testing.T, bundle string) ([]string, error) {
	ctx := testCtx(t)
	cs, err := mcpConnect(t, ctx, r.mcpURL+"/"+bundle, mcpClientOpts{})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names, nil
}

// TestBundlesReplicateThroughEtcd: a bundle written on one replica is
// served by the other (its MCP endpoint and gRPC ListTools), an update
// written on the other reaches the first, and a deletion on either
// removes the endpoint on both; a tool registered later that the bundle's
// glob selects joins it on both. Two gateways, one real embedded etcd.
func TestBundlesReplicateThroughEtcd(t *testing.T) {
	cluster := etcdtest.Start(t)
	a, b := startBundleReplica(t, cluster), startBundleReplica(t, cluster)
	ctx := testCtx(t)
	for _, name := range []string{"ops.first", "ops.second", "other"} {
		if _, err := a.reg.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: name, Backend: "127.0.0.1:1",
			InputSchema: objectSchema()}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.reg.PutBundle(ctx, &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "ops", Tools: []string{"ops.first"}}}); err != nil {
		t.Fatal(err)
	}
	// Polled until served: propagation time is the registry tests' and
	// RELIABILITY.md's claim, not this test's (the guard only bounds a hang).
	expect := func(r *bundleReplica, which string, want []string) {
		t.Helper()
		err := poll(recoveryGuard, func() error {
			got, err := r.mcpBundleTools(t, "ops")
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("tools/list %v, want %v", got, want)
			}
			lr, err := r.reg.ListTools(ctx, &gatewayv1.ListToolsRequest{Bundle: "ops"})
			if err != nil {
				return err
			}
			var listed []string
			for _, tl := range lr.GetTools() {
				listed = append(listed, tl.GetName())
			}
			if !slices.Equal(listed, want) {
				return fmt.Errorf("ListTools %v, want %v", listed, want)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("replica %s: %v", which, err)
		}
	}
	expect(b, "B (bundle written on A)", []string{"ops.first"})

	if _, err := b.reg.PutBundle(ctx, &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "ops", Globs: []string{"ops.*"}}}); err != nil {
		t.Fatal(err)
	}
	expect(a, "A (bundle updated on B)", []string{"ops.first", "ops.second"})
	if _, err := b.reg.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: "ops.third", Backend: "127.0.0.1:1", InputSchema: objectSchema()}}); err != nil {
		t.Fatal(err)
	}
	expect(a, "A (a tool the glob selects registered on B)", []string{"ops.first", "ops.second", "ops.third"})

	if _, err := a.reg.DeleteBundle(ctx, &gatewayv1.DeleteBundleRequest{Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*bundleReplica{"A": a, "B": b} {
		err := poll(recoveryGuard, func() error {
			code, raw, _ := mcpPost(t, r.mcpURL+"/ops", nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if code != http.StatusNotFound {
				return fmt.Errorf("%d %s", code, raw)
			}
			return nil
		})
		if err != nil {
			t.Errorf("replica %s: the deleted bundle's endpoint answers %v, want 404", name, err)
		}
	}
}

func objectSchema() *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
}
