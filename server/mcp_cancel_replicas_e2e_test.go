package server_test

// A 2025-11-25 caller's notifications/cancelled reaching another replica
// than its call's (issue 31, item 4): two gateway replicas sharing a real
// redis-server, a stateful go-sdk upstream that sees its handler's context
// end.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// TestMCPCancelAcrossReplicas: the call runs on replica A; its caller's
// notifications/cancelled goes to B, which finds it on A through Redis,
// and the upstream's handler sees its context end. When the same caller
// has a call under that id on each replica the notification is ambiguous
// and ends neither, as on one replica (CONFORMANCE.md, MCP).
func TestMCPCancelAcrossReplicas(t *testing.T) {
	rows := []struct {
		name, reason string
		// callsOn are the replicas (0: A, 1: B) a call under id 7 runs on;
		// the notification goes to B.
		callsOn    []int
		wantCancel bool
	}{
		{"other replica", "the one call under the id runs on A; B carries the notification there", []int{0}, true},
		{"same replica", "the call runs on B itself, which the notification reaches", []int{1}, true},
		{"one on each", "a call under the id on each replica: ambiguous across the fleet, neither ends", []int{0, 1}, false},
	}
	rs := redistest.Start(t)
	// fleet is two replicas on rs fronting a fresh hang upstream.
	fleet := func(t *testing.T) (*hangUpstream, []*gatewaytest.Env) {
		u, url := startHangUpstream(t)
		tool := gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: "up.hang", InputSchema: schema, Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "hang"}}}
		})
		replica := func() *gatewaytest.Env {
			return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()), tool,
				gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() }))
		}
		return u, []*gatewaytest.Env{replica(), replica()}
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ctx := testCtx(t)
			u, envs := fleet(t)
			for _, on := range row.callsOn {
				openCall(t, ctx, envs[on].MCPURL, "key-a")
				u.waitStarted(t, ctx)
			}
			code, raw, _ := mcpPost(t, envs[1].MCPURL, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "X-Api-Key": {"key-a"}},
				[]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"caller gave up"}}`))
			if code != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: HTTP %d %s, want 202", code, raw)
			}
			if got := u.endedWithin(cancelBound); got != row.wantCancel {
				t.Errorf("upstream handler's context ended within %v: %v, want %v (%s)", cancelBound, got, row.wantCancel, row.reason)
			}
		})
	}
	// The go-sdk v1.8.0 client on 2025-11-25 cancels by notification; a
	// balancer sends that to B while the call runs on A.
	t.Run("go-sdk client, balanced", func(t *testing.T) {
		ctx := testCtx(t)
		u, envs := fleet(t)
		other, err := url.Parse(envs[1].MCPURL)
		if err != nil {
			t.Fatal(err)
		}
		hc := httpClient(t, http.Header{"X-Api-Key": {"key-a"}})
		hc.Transport = balancer{next: hc.Transport, other: other}
		client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: envs[0].MCPURL, HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { u.waitStarted(t, ctx); cancel() }()
		if _, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "up.hang", Arguments: map[string]any{}}); !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
		if !u.endedWithin(cancelBound) {
			t.Errorf("upstream handler's context did not end within %v: the client's notifications/cancelled went to the other replica", cancelBound)
		}
	})
}

// balancer sends a POST holding a notifications/cancelled to other, every
// other request where it was going: a load balancer that spread one
// client's requests over two replicas.
type balancer struct {
	next  http.RoundTripper
	other *url.URL
}

func (b balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		return b.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		r.URL.Scheme, r.URL.Host, r.Host = b.other.Scheme, b.other.Host, b.other.Host
	}
	return b.next.RoundTrip(r)
}

// openCall posts a 2025-11-25 tools/call of "up.hang" (id 7) with API key
// key and leaves its request open until the test ends.
func openCall(t *testing.T, ctx context.Context, url, key string) {
	t.Helper()
	callCtx, closeCall := context.WithCancel(ctx)
	t.Cleanup(closeCall)
	h, body := mcpRevisionRequest("2025-11-25", "tools/call", `{"name":"up.hang","arguments":{}}`)
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := httpClient(t, nil)
	go func() {
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}
