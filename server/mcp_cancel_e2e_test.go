package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// cancelBound is how long after a caller's cancellation the upstream's
// tool handler must see its context end.
const cancelBound = 2 * time.Second

// hangUpstream is a stateful go-sdk MCP server (a stateless one never
// sees a client's notifications/cancelled: each POST is its own session)
// whose tool "hang" reports that it started, then waits for its context
// to end and reports that.
type hangUpstream struct {
	started chan struct{}
	ended   chan struct{}
}

func startHangUpstream(t *testing.T) (*hangUpstream, string) {
	t.Helper()
	u := &hangUpstream{started: make(chan struct{}, 4), ended: make(chan struct{}, 4)}
	// stop releases a handler still waiting when the test ends: a stateful
	// server's handler context outlives the HTTP connection.
	stop := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "hang", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hang", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			u.started <- struct{}{}
			select {
			case <-ctx.Done():
				u.ended <- struct{}{}
			case <-stop:
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "too late"}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		close(stop)
		up.CloseClientConnections()
		up.Close()
	})
	return u, up.URL
}

// waitStarted waits until the upstream's handler runs.
func (u *hangUpstream) waitStarted(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-u.started:
	case <-ctx.Done():
		t.Fatal("the upstream tool never started")
	}
}

// endedWithin reports whether the upstream handler's context ended within d.
func (u *hangUpstream) endedWithin(d time.Duration) bool {
	select {
	case <-u.ended:
		return true
	case <-time.After(d):
		return false
	}
}

// TestMCPUpstreamCancel: a caller's cancellation of a call to a tool
// whose backend is an upstream MCP server over streamable HTTP ends the
// upstream tool handler's context, seen on the upstream's side, for a gRPC
// cancel (of InvokeTool or InvokeToolStream) or deadline, a 2026-07-28
// caller closing its request, and a 2025-11-25 caller's
// notifications/cancelled naming the call's id (the face ties it to the
// same caller's call in flight); one naming another id, or sent by another
// caller, cancels nothing (CONFORMANCE.md, MCP).
func TestMCPUpstreamCancel(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, reason string
		// call makes the call to "up.hang" through env, cancelling it once
		// the upstream handler has started; it returns the caller's error.
		call       func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error
		wantCancel bool
		opts       []gatewaytest.Option // the gateway's, besides WithMCP
		adminKey   string               // the key that registers the tool ("": none)
	}{
		{
			name:       "grpc cancel",
			reason:     "a gRPC caller's context cancel ends the InvokeTool handler's context, which aborts the upstream HTTP request and sends notifications/cancelled",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				go func() { u.waitStarted(t, ctx); cancel() }()
				_, err := env.Client.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: "up.hang", Arguments: &structpb.Struct{}})
				if status.Code(err) != codes.Canceled {
					t.Errorf("InvokeTool: %v, want Canceled", err)
				}
				return err
			},
		},
		{
			name:       "grpc stream cancel",
			reason:     "cancelling an InvokeToolStream call ends its handler's context, and with it the upstream call, as for InvokeTool",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				stream, err := env.Client.InvokeToolStream(cctx, &gatewayv1.InvokeToolRequest{Tool: "up.hang", Arguments: &structpb.Struct{}})
				if err != nil {
					t.Fatal(err)
				}
				go func() { u.waitStarted(t, ctx); cancel() }()
				_, err = stream.Recv()
				if status.Code(err) != codes.Canceled {
					t.Errorf("InvokeToolStream: %v, want Canceled", err)
				}
				return err
			},
		},
		{
			name:       "grpc deadline",
			reason:     "a gRPC deadline travels as grpc-timeout; its expiry ends the server handler's context as a cancel does",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				// Long enough for the call to reach the upstream on a loaded
				// machine (500 ms did not always); the row waits it out.
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				_, err := env.Client.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: "up.hang", Arguments: &structpb.Struct{}})
				if status.Code(err) != codes.DeadlineExceeded {
					t.Errorf("InvokeTool: %v, want DeadlineExceeded", err)
				}
				// The upstream started before the deadline (else the row
				// would prove nothing).
				u.waitStarted(t, ctx)
				return err
			},
		},
		{
			name:       "mcp 2026-07-28 closes its request",
			reason:     "on 2026-07-28 a caller cancels by closing its HTTP request; the face's request context ends and with it the upstream call",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpCancelCall(t, ctx, env, u, "2026-07-28")
			},
		},
		{
			name:       "mcp 2025-11-25 SDK client cancels",
			reason:     "the go-sdk v1.8.0 client on 2025-11-25 cancels by notifications/cancelled for the call's id, which the face ties to the same caller's call in flight",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpCancelCall(t, ctx, env, u, "2025-11-25")
			},
		},
		{
			name:       "mcp 2025-11-25 notifications/cancelled",
			reason:     "the caller's request stays open and only its notifications/cancelled, a separate POST from the same caller naming the call's id, says cancel: the face ties it to the call and ends it",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpNotifyCancelled(t, ctx, env, u, "", "", "7")
			},
		},
		{
			name:       "mcp 2025-11-25 notifications/cancelled, SDK path",
			reason:     "with the fast path off the SDK answers the call, and the face ties the notification to it the same way",
			opts:       []gatewaytest.Option{gatewaytest.WithConfig(func(c *server.Config) { c.MCP.SDKOnly = true })},
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpNotifyCancelled(t, ctx, env, u, "", "", "7")
			},
		},
		{
			name:       "mcp 2025-11-25 notifications/cancelled for another id",
			reason:     "a notifications/cancelled naming an id the caller has no call in flight under cancels nothing",
			wantCancel: false,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpNotifyCancelled(t, ctx, env, u, "", "", `"7"`)
			},
		},
		{
			name:       "mcp 2025-11-25 notifications/cancelled by the same key",
			reason:     "an authenticated caller's notifications/cancelled ends its own call",
			opts:       []gatewaytest.Option{gatewaytest.WithPolicy(twoCallers())},
			adminKey:   "key-admin",
			wantCancel: true,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpNotifyCancelled(t, ctx, env, u, "key-a", "key-a", "7")
			},
		},
		{
			name:       "mcp 2025-11-25 notifications/cancelled by another caller",
			reason:     "only the caller that sent a call can cancel it: another caller's notifications/cancelled naming the same id cancels nothing",
			opts:       []gatewaytest.Option{gatewaytest.WithPolicy(twoCallers())},
			adminKey:   "key-admin",
			wantCancel: false,
			call: func(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream) error {
				return mcpNotifyCancelled(t, ctx, env, u, "key-a", "key-b", "7")
			},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			u, url := startHangUpstream(t)
			env := gatewaytest.Start(t, append([]gatewaytest.Option{gatewaytest.WithMCP()}, row.opts...)...)
			schema, err := structpb.NewStruct(map[string]any{"type": "object"})
			if err != nil {
				t.Fatal(err)
			}
			tool := &gatewayv1.Tool{Name: "up.hang", InputSchema: schema,
				Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: url, Tool: "hang"}}}}
			rctx := ctx
			if row.adminKey != "" {
				rctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", row.adminKey)
			}
			if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(rctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
				t.Fatal(err)
			}
			if err := row.call(t, ctx, env, u); err == nil {
				t.Fatalf("the call returned no error (%s)", row.reason)
			}
			if got := u.endedWithin(cancelBound); got != row.wantCancel {
				t.Errorf("upstream handler's context ended within %v: %v, want %v (%s)", cancelBound, got, row.wantCancel, row.reason)
			}
		})
	}
}

// mcpCancelCall calls "up.hang" with the SDK's client on revision rev
// cancelling the call's context once the upstream has started.
func mcpCancelCall(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream, rev string) error {
	t.Helper()
	hc := httpClient(t, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.MCPURL, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != rev {
		t.Fatalf("negotiated %s, want %s", got, rev)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { u.waitStarted(t, ctx); cancel() }()
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "up.hang", Arguments: map[string]any{}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool: %v, want context.Canceled", err)
	}
	return err
}

// mcpNotifyCancelled posts a 2025-11-25 tools/call for "up.hang" (id 7)
// with API key callKey ("": none) and, once the upstream has started, a
// notifications/cancelled for requestId (JSON text) with cancelKey in a
// second POST, keeping the call's request open; it returns an error saying
// the call was left open (and closes its request when the test ends).
func mcpNotifyCancelled(t *testing.T, ctx context.Context, env *gatewaytest.Env, u *hangUpstream, callKey, cancelKey, requestID string) error {
	t.Helper()
	callCtx, closeCall := context.WithCancel(ctx)
	t.Cleanup(closeCall)
	h, body := mcpRevisionRequest("2025-11-25", "tools/call", `{"name":"up.hang","arguments":{}}`)
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, env.MCPURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	if callKey != "" {
		req.Header.Set("X-API-Key", callKey)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := httpClient(t, nil)
	go func() {
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	u.waitStarted(t, ctx)
	ch := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}
	if cancelKey != "" {
		ch.Set("X-API-Key", cancelKey)
	}
	code, raw, _ := mcpPost(t, env.MCPURL, ch,
		[]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+requestID+`,"reason":"caller gave up"}}`))
	if code != http.StatusAccepted {
		t.Errorf("notifications/cancelled: HTTP %d %s, want 202", code, raw)
	}
	return errors.New("the call was left open; only notifications/cancelled was sent")
}

// twoCallers is an authenticated policy with two invokers (key-a, key-b)
// and an admin (key-admin) that registers the tool.
func twoCallers() server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "a", SHA256: policy.HashAPIKey("key-a"), Roles: []string{policy.RoleInvoker}},
		{Name: "b", SHA256: policy.HashAPIKey("key-b"), Roles: []string{policy.RoleInvoker}},
		{Name: "admin", SHA256: policy.HashAPIKey("key-admin"), Roles: []string{policy.RoleAdmin}},
	}}
	return p
}
