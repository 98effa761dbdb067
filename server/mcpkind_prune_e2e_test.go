package server_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// sleepUpstream is an upstream MCP server with one tool, "sleep", that
// answers "slept" after the arguments' ms (at most 5 s).
type sleepUpstream struct {
	mcp     *mcp.Server
	url     string
	arrived atomic.Int64 // sleep calls received
}

func startSleepUpstream(t *testing.T) *sleepUpstream {
	t.Helper()
	u := &sleepUpstream{mcp: mcp.NewServer(&mcp.Implementation{Name: "sleeper", Version: "1"}, nil)}
	type sleepIn struct {
		MS int `json:"ms"`
	}
	mcp.AddTool(u.mcp, &mcp.Tool{Name: "sleep", Description: "Answers after ms milliseconds."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			u.arrived.Add(1)
			select {
			case <-time.After(time.Duration(min(in.MS, 5000)) * time.Millisecond):
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.mcp }, nil))
	u.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		var open []*mcp.ServerSession
		for ss := range u.mcp.Sessions() {
			open = append(open, ss)
		}
		for _, ss := range open {
			_ = ss.Close()
		}
	})
	return u
}

// sessions is the upstream's initialized sessions, by ID. A client of the
// current protocol first tries server/discover, which a stateful server
// answers on a session it closes only after the response: counting
// uninitialized sessions would count those passing ones.
func (u *sleepUpstream) sessions() map[string]bool {
	ids := map[string]bool{}
	for ss := range u.mcp.Sessions() {
		if ss.InitializeParams() != nil {
			ids[ss.ID()] = true
		}
	}
	return ids
}

// awaitSessions waits (at most 5 s) until the upstream has n initialized
// sessions and returns them.
func (u *sleepUpstream) awaitSessions(t *testing.T, n int, what string) map[string]bool {
	t.Helper()
	var ids map[string]bool
	if err := poll(5*time.Second, func() error {
		if ids = u.sessions(); len(ids) != n {
			return fmt.Errorf("%s: %d sessions from the gateway after 5 s; want %d", what, len(ids), n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestMCPUpstreamSessionEndsWithItsLastTool: the gateway's sessions with an
// upstream MCP server (a call's and the list_changed listener's) last while
// a registered tool uses the upstream and end once the last one is
// deleted — after a call still in flight, which is answered; another
// upstream's session is left alone.
func TestMCPUpstreamSessionEndsWithItsLastTool(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := gatewaytest.Start(t)
	gone, kept := startSleepUpstream(t), startSleepUpstream(t)
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"ms": map[string]any{"type": "integer"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range []struct{ name, url string }{{"gone.a", gone.url}, {"gone.b", gone.url}, {"kept.a", kept.url}} {
		// Imported (an origin): followed, so each upstream has a listener.
		tool := &gatewayv1.Tool{Name: tl.name, InputSchema: schema, Origin: &gatewayv1.ToolOrigin{McpUpstream: tl.url},
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: tl.url, Tool: "sleep"}}}}
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tl.name, err)
		}
	}
	call := func(ctx context.Context, name string, ms int) error {
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: name, Arguments: gatewaytest.Args(t, map[string]any{"ms": ms})})
		if err == nil && resp.GetResult().GetStringValue() != "slept" {
			t.Errorf("%s answered %v; want \"slept\"", name, resp.GetResult())
		}
		return err
	}
	for _, name := range []string{"gone.a", "gone.b", "kept.a"} {
		if err := call(ctx, name, 0); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Each upstream: the calls' session and the list_changed listener's.
	gone.awaitSessions(t, 2, "the upstream of gone.a and gone.b")
	keptBefore := kept.awaitSessions(t, 2, "the upstream of kept.a")

	if _, err := rc.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "gone.a"}); err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, "gone.b", 0); err != nil {
		t.Fatalf("gone.b after gone.a was deleted: %v; want its upstream still served", err)
	}

	// The last tool goes while a call to it is in flight.
	inFlight := make(chan error, 1)
	arrived := gone.arrived.Load()
	go func() { inFlight <- call(ctx, "gone.b", 700) }()
	for i := 0; gone.arrived.Load() == arrived; i++ {
		if i == 100 {
			t.Fatal("the call never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := rc.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: "gone.b"}); err != nil {
		t.Fatal(err)
	}
	if err := <-inFlight; err != nil {
		t.Errorf("the call in flight when its tool was deleted: %v; want its answer (its session kept until it ended)", err)
	}
	gone.awaitSessions(t, 0, "the upstream of deleted tools")
	if kept := kept.sessions(); !maps.Equal(kept, keptBefore) {
		t.Errorf("the other upstream's sessions are %v, were %v; want them left alone", slices.Sorted(maps.Keys(kept)), slices.Sorted(maps.Keys(keptBefore)))
	}
	if err := call(ctx, "kept.a", 0); err != nil {
		t.Errorf("kept.a: %v", err)
	}
}
