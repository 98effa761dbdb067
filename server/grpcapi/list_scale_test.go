package grpcapi

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/pagingtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

// Paging a caller's view of a 5,000-tool registry (a policy hiding some)
// while tools are added and deleted between pages, on both sides of the
// cursor: every visible tool present throughout comes exactly once, in
// name order; one added ahead of the cursor comes; one deleted ahead does
// not; nothing hidden comes.
func TestListToolsPagesEveryVisibleToolOnceUnderChange(t *testing.T) {
	t.Parallel()
	const n = 5000
	// A guard, not a timing: 5,000 tools under -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store := memstore.New()
	schema := boardSchema(t)
	tool := func(name string) registry.Tool {
		return registry.Tool{Name: name, InputSchema: schema, Backend: "127.0.0.1:7001"}
	}
	for i := range n {
		if _, err := store.Put(ctx, tool(fmt.Sprintf("t-%05d", i*10)), nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(store, registry.WithLazyCompile())
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	az, err := policy.NewAuthorizer(policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"c": {Allow: []string{"t-*"}, Deny: []string{"*30"}}}})
	if err != nil {
		t.Fatal(err)
	}
	visible := func(name string) bool { return az.AllowTool(policy.Caller{Subject: "c"}, name) == nil }
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	svc := registerRegistryService(gs, reg, WithToolFilter(func(_ context.Context, name string) bool { return visible(name) }))
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		svc.Close()
		gs.Stop()
		<-served
		reg.Close()
		store.Close()
	})
	client := gatewayv1.NewToolRegistryServiceClient(conn)

	touched := map[string]bool{} // changed while paging: judged apart
	var addedAhead, deletedAhead []string
	var got []string
	token := ""
	for page := 0; ; page++ {
		resp, err := client.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: 97, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range resp.GetTools() {
			got = append(got, tl.GetName())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
		if page > 2*n/97 {
			t.Fatal("paging does not end")
		}
		// Between pages: one tool added and one deleted on each side of
		// the cursor (the last name listed).
		last := got[len(got)-1]
		var li int
		fmt.Sscanf(last, "t-%05d", &li)
		behind, ahead := li-10*(1+page%7), li+10*(3+page%5)
		for _, c := range []struct {
			name  string
			add   bool
			ahead bool
		}{
			{fmt.Sprintf("t-%05d", behind+5), true, false},
			{fmt.Sprintf("t-%05d", ahead+5), true, true},
			{fmt.Sprintf("t-%05d", behind), false, false},
			{fmt.Sprintf("t-%05d", ahead), false, true},
		} {
			if touched[c.name] || behind < 0 {
				continue
			}
			touched[c.name] = true
			if c.add {
				if _, err := reg.Register(ctx, tool(c.name), registry.RegisterOptions{}); err != nil {
					t.Fatal(err)
				}
				if c.ahead && visible(c.name) {
					addedAhead = append(addedAhead, c.name)
				}
			} else if err := reg.Delete(ctx, c.name, nil); err == nil && c.ahead {
				deletedAhead = append(deletedAhead, c.name)
			}
		}
	}
	initial := make([]string, n)
	for i := range n {
		initial[i] = fmt.Sprintf("t-%05d", i*10)
	}
	pagingtest.Check(t, pagingtest.Paged{Got: got, Initial: initial, Visible: visible, Touched: touched,
		AddedAhead: addedAhead, DeletedAhead: deletedAhead})
}
