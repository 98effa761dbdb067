package grpcapi

import (
	"context"
	"flag"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

var listScaleTools = flag.Int("list-tools", 100_000, "tools BenchmarkListToolsScale lists")

// BenchmarkListToolsScale: ListTools over real gRPC on loopback, paging
// (page_size 100) through everything one caller sees in a registry of
// 100,000 tools, the caller's view decided by the policy's own allow/deny
// lists (policy.Authorizer.ToolAllowed, as pipeline.Visible asks it). One
// op is one page; a caller whose tools are few and spread out makes every
// page scan far (the last one to the end of the catalog).
//
//	go test -run '^$' -bench BenchmarkListToolsScale -benchmem ./server/grpcapi/
func BenchmarkListToolsScale(b *testing.B) {
	n := *listScaleTools
	ctx := context.Background()
	store := memstore.New()
	schema := boardSchemaB(b)
	for i := range n {
		t := registry.Tool{Name: fmt.Sprintf("team%03d.tool-%06d", i%997, i), InputSchema: schema, Backend: "127.0.0.1:7001",
			Labels: map[string]string{"team": fmt.Sprintf("team%03d", i%997)}}
		if _, err := store.Put(ctx, t, nil); err != nil {
			b.Fatal(err)
		}
	}
	reg := registry.New(store, registry.WithLazyCompile())
	if err := reg.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	// The warm-up compiles on all CPUs: done before anything is measured.
	if err := reg.WaitCompiled(ctx); err != nil {
		b.Fatal(err)
	}
	az, err := policy.NewAuthorizer(policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"all":     {Allow: []string{"*"}},
		"tenth":   {Allow: []string{"*7"}},
		"percent": {Allow: []string{"*77"}, Deny: []string{"team9*"}},
		"few":     {Allow: []string{"team5*.*"}, Deny: []string{"*1", "*3"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	for _, who := range []string{"all", "tenth", "percent", "few"} {
		b.Run(who, func(b *testing.B) {
			c := policy.Caller{Subject: who}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			gs := grpc.NewServer()
			svc := registerRegistryService(gs, reg, WithToolFilter(func(_ context.Context, name string) bool { return az.ToolAllowed(c, name) }))
			go gs.Serve(lis)
			defer func() { svc.Close(); gs.Stop() }()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			client := gatewayv1.NewToolRegistryServiceClient(conn)
			var token string
			pages, seen := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: 100, PageToken: token})
				if err != nil {
					b.Fatal(err)
				}
				pages++
				seen += len(resp.GetTools())
				if token = resp.GetNextPageToken(); token == "" {
					b.ReportMetric(float64(seen)/float64(pages), "tools/page")
				}
			}
		})
	}
}

func boardSchemaB(b *testing.B) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
