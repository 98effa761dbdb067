package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// progressUpstream is a go-sdk MCP server whose tool "steps" sends three
// notifications/progress for the token it was given, and "flood" a
// thousand, before answering; tokens records the token each call carried.
type progressUpstream struct {
	mu     sync.Mutex
	tokens []any
}

func (u *progressUpstream) token() any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tokens[len(u.tokens)-1]
}

func (u *progressUpstream) serve(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "progress", Version: "1"}, nil)
	tool := func(n int) mcp.ToolHandlerFor[struct{}, any] {
		return func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			u.mu.Lock()
			u.tokens = append(u.tokens, token)
			u.mu.Unlock()
			if token != nil {
				for i := 1; i <= n; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(n),
						Message: fmt.Sprintf("step %d", i)})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "steps", Description: "Reports three steps."}, tool(3))
	mcp.AddTool(srv, &mcp.Tool{Name: "flood", Description: "Reports a thousand steps."}, tool(1000))
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		up.CloseClientConnections()
		up.Close()
	})
	return up.URL
}

// TestMCPProgressRelay: an HTTP upstream's notifications/progress for a
// call reach the MCP caller that asked for progress as notifications/
// progress for the caller's own token, in order, on the fast path and on
// the SDK's path, for 2026-07-28 and 2025-11-25 callers; the upstream sees
// a token of the gateway's, never the caller's; a call without a token
// sends the upstream none and relays nothing; a flood of 1000 is relayed
// within pipeline.ProgressMaxPerCall.
func TestMCPProgressRelay(t *testing.T) {
	t.Parallel()
	for _, path := range []struct {
		name     string
		sdkOnly  bool
		revision string // the caller's protocol revision ("": the SDK's latest)
	}{
		{"fast path", false, ""},
		{"SDK path", true, ""},
		{"fast path 2025-11-25", false, "2025-11-25"},
		{"SDK path 2025-11-25", true, "2025-11-25"},
	} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			u := &progressUpstream{}
			url := u.serve(t)
			env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) { c.MCP.SDKOnly = path.sdkOnly }))
			rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
			schema, err := structpb.NewStruct(map[string]any{"type": "object"})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"steps", "flood"} {
				tool := &gatewayv1.Tool{Name: "up." + name, InputSchema: schema,
					Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: url, Tool: name}}}}
				if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
					t.Fatalf("register %s: %v", name, err)
				}
			}

			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params)
					mu.Unlock()
				}})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.MCPURL, HTTPClient: httpClient(t, nil), MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: path.revision})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			// through waits until the notifications up to n for token have
			// been handled and takes them all: the SDK's client handles
			// notifications in order, after the response that follows them
			// may have returned the call.
			through := func(token any, n int) []*mcp.ProgressNotificationParams {
				t.Helper()
				for {
					mu.Lock()
					seen := 0
					for _, p := range got {
						if p.ProgressToken == token {
							seen++
						}
					}
					if seen >= n {
						g := got
						got = nil
						mu.Unlock()
						return g
					}
					mu.Unlock()
					select {
					case <-ctx.Done():
						t.Fatalf("saw %d notifications for %v, want %d", seen, token, n)
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
			call := func(tool string, meta mcp.Meta) {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, Meta: meta})
				if err != nil || res.IsError {
					t.Fatalf("call %s: %v %+v", tool, err, res)
				}
			}
			checkSteps := func(steps []*mcp.ProgressNotificationParams, token string) {
				t.Helper()
				if len(steps) != 3 {
					t.Fatalf("relayed %d notifications, want 3: %+v", len(steps), steps)
				}
				for i, p := range steps {
					want := fmt.Sprintf("step %d", i+1)
					if p.ProgressToken != token || p.Progress != float64(i+1) || p.Total != 3 || p.Message != want {
						t.Errorf("notification %d = %+v, want token %s, progress %d of 3, %q", i, p, token, i+1, want)
					}
				}
			}

			call("up.steps", mcp.Meta{"progressToken": "caller-token"})
			checkSteps(through("caller-token", 3), "caller-token")
			if tok, ok := u.token().(string); !ok || tok == "" || strings.Contains(tok, "caller-token") {
				t.Errorf("the upstream got progress token %v, want one of the gateway's own", u.token())
			}

			call("up.steps", nil)
			if tok := u.token(); tok != nil {
				t.Errorf("the upstream got progress token %v for a call without one", tok)
			}
			// Whatever the call without a token relayed would be handled
			// before the next call's notifications.
			call("up.steps", mcp.Meta{"progressToken": "second"})
			checkSteps(through("second", 3), "second")

			call("up.flood", mcp.Meta{"progressToken": 7})
			call("up.steps", mcp.Meta{"progressToken": "after"})
			all := through("after", 3)
			flood := all[:len(all)-3]
			checkSteps(all[len(all)-3:], "after")
			if len(flood) == 0 || len(flood) > pipeline.ProgressMaxPerCall {
				t.Errorf("a flood of 1000 relayed %d notifications, want 1..%d", len(flood), pipeline.ProgressMaxPerCall)
			}
			for _, p := range flood {
				if p.ProgressToken != float64(7) {
					t.Errorf("flood notification for token %v (%T), want 7", p.ProgressToken, p.ProgressToken)
					break
				}
			}
			t.Logf("%s: a flood of 1000 relayed %d", path.name, len(flood))
		})
	}
}
