package server_test

// Resource subscriptions of face sessions before 2026-07-28 (issue 31 item
// 1; server/mcpapi/sessionsubs.go, sessionstream.go): the go-sdk v1.8.0
// client on 2025-11-25 subscribes in POSTs carrying its session and hears
// notifications/resources/updated on its session's GET stream, relayed
// from a go-sdk v1.8.0 upstream whose resource changes; one replica, two
// replicas on a real redis-server, and server-everything.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

const (
	subDocA = "flowdrop-mcp://up_/doc://a"
	subDocB = "flowdrop-mcp://up_/doc://b"
)

// subsUpstream is a go-sdk upstream offering resources doc://a and
// doc://b with subscriptions; it records the URIs subscribed and
// unsubscribed at it (the gateway's session with it).
type subsUpstream struct {
	mcp *mcp.Server
	url string
	mu  sync.Mutex
	// subs counts the live subscriptions per upstream URI; unsubs is every
	// unsubscribe, in order.
	subs   map[string]int
	unsubs []string
}

func (u *subsUpstream) subscribed(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subs[uri]
}

func startSubsUpstream(t *testing.T) *subsUpstream {
	t.Helper()
	u := &subsUpstream{subs: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			u.mu.Lock()
			u.subs[r.Params.URI]++
			u.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			u.mu.Lock()
			u.subs[r.Params.URI]--
			u.unsubs = append(u.unsubs, r.Params.URI)
			u.mu.Unlock()
			return nil
		},
	})
	u.mcp = s
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "doc"}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "doc://a", Name: "a"}, read)
	s.AddResource(&mcp.Resource{URI: "doc://b", Name: "b"}, read)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	u.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// subsPolicy: agent and other may read up_'s resources; nosubs may read
// none of its resources (its tools allowed); denied has up_ out of view.
func subsPolicy(keyFile string) server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "other", SHA256: policy.HashAPIKey("other-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "denied", SHA256: policy.HashAPIKey("denied-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":  {Allow: []string{"up_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}},
		"other":  {Allow: []string{"up_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}},
		"denied": {Allow: []string{"*"}, Deny: []string{"up_*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
	}}
	if keyFile != "" {
		p.MCPUpstreams.Input.KeyFiles = []string{keyFile}
	}
	return p
}

// subsReplicas starts n gateway replicas fronting u (Redis at redisAddr
// when not empty) with the policy p, and waits until the first declares
// resources.subscribe to a 2025-11-25 session.
func subsReplicas(t *testing.T, u *subsUpstream, p server.PolicyConfig, redisAddr string, n int) []*gatewaytest.Env {
	t.Helper()
	tool := gatewaytest.WithTool(func(string) registry.Tool {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		return registry.Tool{Name: "up_echo", InputSchema: schema, Origin: &registry.Origin{MCPUpstream: u.url},
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: u.url, Tool: "echo"}}}
	})
	envs := make([]*gatewaytest.Env, n)
	for i := range envs {
		envs[i] = gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), tool,
			gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = redisAddr }))
	}
	ctx := longCtx(t)
	for _, env := range envs {
		if err := poll(30*time.Second, func() error {
			cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}, version: "2025-11-25"})
			if err != nil {
				return err
			}
			defer cs.Close()
			if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
				return fmt.Errorf("resources.subscribe not declared yet: %+v", c.Resources)
			}
			return nil
		}); err != nil {
			t.Fatalf("the upstream's capabilities never reached the gateway: %v", err)
		}
	}
	return envs
}

func longCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// updates collects a client's notifications/resources/updated.
type updates struct {
	mu   sync.Mutex
	uris []string
	ch   chan string
}

func newUpdates() *updates { return &updates{ch: make(chan string, 256)} }

func (u *updates) handler(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	u.uris = append(u.uris, r.Params.URI)
	u.mu.Unlock()
	select {
	case u.ch <- r.Params.URI:
	default:
	}
}

func (u *updates) got() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.uris...)
}

// sessionClient connects the go-sdk client on 2025-11-25 as key, its
// requests sent through hc (nil: straight).
func sessionClient(t *testing.T, ctx context.Context, endpoint, key string, hc *http.Client) (*mcp.ClientSession, *updates) {
	t.Helper()
	up := newUpdates()
	if hc == nil {
		hc = httpClient(t, nil)
	}
	hc.Transport = bearerTransport{key: key, next: hc.Transport}
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, &mcp.ClientOptions{ResourceUpdatedHandler: up.handler})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: 3},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, up
}

// bearerTransport sends key as the bearer credential.
type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// fireUntil makes the upstream announce a change of each of uris, every
// 300ms, until seen reports one arrived; false when none did within 30s.
func fireUntil(ctx context.Context, up *mcp.Server, uris []string, seen <-chan string, want string) bool {
	for len(seen) > 0 {
		<-seen // earlier updates: this one must arrive anew
	}
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, uri := range uris {
			_ = up.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
		select {
		case got := <-seen:
			if got == want {
				return true
			}
		case <-tick.C:
		case <-deadline:
			return false
		}
	}
}

// TestMCPSessionSubscriptions: one replica (no Redis). A 2025-11-25
// session is declared resources.subscribe (not listChanged), subscribes,
// and hears the upstream's update with the face's URI on its GET stream;
// another caller's session and another session of the same caller hear
// nothing of it; unsubscribe stops it (the upstream is unsubscribed); a
// policy reload that denies the URI drops the subscription at delivery.
func TestMCPSessionSubscriptions(t *testing.T) {
	up := startSubsUpstream(t)
	p := subsPolicy(sessionKeyFile(t))
	env := subsReplicas(t, up, p, "", 1)[0]
	ctx := longCtx(t)

	agent, agentUp := sessionClient(t, ctx, env.MCPURL, "agent-key", nil)
	if c := agent.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe || c.Resources.ListChanged {
		t.Fatalf("a 2025-11-25 session is declared %+v; want subscribe and no listChanged (no list changes on its stream)", c.Resources)
	}
	other, otherUp := sessionClient(t, ctx, env.MCPURL, "other-key", nil)
	_, sibling := sessionClient(t, ctx, env.MCPURL, "agent-key", nil)
	for _, s := range []struct {
		cs  *mcp.ClientSession
		uri string
	}{{agent, subDocA}, {agent, subDocB}, {other, subDocB}} {
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: s.uri}); err != nil {
			t.Fatalf("subscribe %s: %v", s.uri, err)
		}
	}
	if !fireUntil(ctx, up.mcp, []string{"doc://a"}, agentUp.ch, subDocA) {
		t.Fatalf("no notifications/resources/updated for %s reached the subscribed session; got %v", subDocA, agentUp.got())
	}
	// other subscribed to b only; the agent's other session to nothing.
	if !fireUntil(ctx, up.mcp, []string{"doc://b"}, otherUp.ch, subDocB) {
		t.Fatalf("other's session never heard %s", subDocB)
	}
	for _, u := range otherUp.got() {
		if u != subDocB {
			t.Errorf("other caller's session heard %q, which it never subscribed to", u)
		}
	}
	if got := sibling.got(); len(got) > 0 {
		t.Errorf("an unsubscribed session of the same caller heard %v", got)
	}

	t.Run("unsubscribe stops it", func(t *testing.T) {
		if err := agent.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: subDocA}); err != nil {
			t.Fatal(err)
		}
		if err := poll(10*time.Second, func() error {
			if n := up.subscribed("doc://a"); n != 0 {
				return fmt.Errorf("doc://a still subscribed %d times at the upstream", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		before := len(agentUp.got())
		// b still reaches the agent: a, announced first, does not.
		if !fireUntil(ctx, up.mcp, []string{"doc://a", "doc://b"}, agentUp.ch, subDocB) {
			t.Fatal("the agent no longer hears doc://b")
		}
		for _, u := range agentUp.got()[before:] {
			if u == subDocA {
				t.Errorf("an update of %s reached the session after it unsubscribed", subDocA)
			}
		}
	})

	t.Run("a policy reload that denies the URI drops the subscription", func(t *testing.T) {
		next := subsPolicy(p.MCPUpstreams.Input.KeyFiles[0])
		acc := next.Authz.Callers["agent"]
		acc.Resources.Deny = []string{subDocB}
		next.Authz.Callers["agent"] = acc
		if err := env.Gateway.ReloadPolicy(next); err != nil {
			t.Fatal(err)
		}
		// other still hears b (its own subscription); the agent's is
		// dropped at that delivery: once other unsubscribes, none holds
		// the upstream's.
		if !fireUntil(ctx, up.mcp, []string{"doc://b"}, otherUp.ch, subDocB) {
			t.Fatal("other no longer hears doc://b")
		}
		if err := other.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: subDocB}); err != nil {
			t.Fatal(err)
		}
		if err := poll(10*time.Second, func() error {
			if n := up.subscribed("doc://b"); n != 0 {
				return fmt.Errorf("doc://b still subscribed %d times at the upstream: the denied session's subscription was not dropped", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// From here on nothing of b reaches the agent: other subscribes
		// again and hears a fresh update; the agent hears none.
		mark := len(agentUp.got())
		if err := other.Subscribe(ctx, &mcp.SubscribeParams{URI: subDocB}); err != nil {
			t.Fatal(err)
		}
		if !fireUntil(ctx, up.mcp, []string{"doc://b"}, otherUp.ch, subDocB) {
			t.Fatal("other's new subscription hears nothing")
		}
		for _, u := range agentUp.got()[mark:] {
			if u == subDocB {
				t.Errorf("an update of %s reached a caller the policy now denies it", subDocB)
			}
		}
		var rpc *jsonrpc.Error
		if err := agent.Subscribe(ctx, &mcp.SubscribeParams{URI: subDocB}); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("subscribing a denied URI: %v, want resource not found", err)
		}
	})
}

// sessionRaw initializes a 2025-11-25 session as key with raw requests and
// returns its id.
func sessionRaw(t *testing.T, endpoint, key string) string {
	t.Helper()
	code, h, body := mcpDo(t, http.MethodPost, endpoint, http.Header{"Authorization": {"Bearer " + key}}, sessionInitialize("2025-11-25"))
	id := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d %s, no session", code, body)
	}
	return id
}

func sessionHeaders(key, id string) http.Header {
	h := http.Header{"Authorization": {"Bearer " + key}, "Mcp-Protocol-Version": {"2025-11-25"}}
	if id != "" {
		h.Set("Mcp-Session-Id", id)
	}
	return h
}

// openStream opens a session's GET stream and returns its response.
func openStream(t *testing.T, ctx context.Context, endpoint, key, id string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = sessionHeaders(key, id)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestMCPSessionSubscriptionBounds: what is refused, and how.
func TestMCPSessionSubscriptionBounds(t *testing.T) {
	up := startSubsUpstream(t)
	env := subsReplicas(t, up, subsPolicy(sessionKeyFile(t)), "", 1)[0]
	ctx := longCtx(t)
	subscribe := func(key, id, uri string) *rpcReply {
		_, _, r := mcpPost(t, env.MCPURL, sessionHeaders(key, id),
			[]byte(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`))
		return r
	}
	id := sessionRaw(t, env.MCPURL, "agent-key")
	t.Run("subscriptions per session", func(t *testing.T) {
		for i := range 64 {
			if r := subscribe("agent-key", id, fmt.Sprintf("flowdrop-mcp://up_/doc://n%d", i)); r == nil || r.Error != nil {
				t.Fatalf("subscription %d: %+v", i+1, r)
			}
		}
		r := subscribe("agent-key", id, "flowdrop-mcp://up_/doc://n64")
		if r == nil || r.Error == nil || r.Error.Code != mcpapi.MCPCodeSubscriptionLimit {
			t.Fatalf("the 65th subscription of a session: %+v, want %d", r, mcpapi.MCPCodeSubscriptionLimit)
		}
		// Another session of the caller has a bound of its own.
		if r := subscribe("agent-key", sessionRaw(t, env.MCPURL, "agent-key"), subDocA); r == nil || r.Error != nil {
			t.Fatalf("another session's first subscription: %+v", r)
		}
	})
	rows := []struct {
		reason   string
		key, id  string
		uri      string
		wantCode int64
	}{
		{"without a session, as on a stateless face", "agent-key", "", subDocA, jsonrpc.CodeMethodNotFound},
		{"the upstream is out of the caller's view: not found, as a read", "denied-key", sessionRaw(t, env.MCPURL, "denied-key"), subDocA, jsonrpc.CodeInvalidParams},
		{"no upstream has the namespace", "agent-key", id, "flowdrop-mcp://zz_/doc://a", jsonrpc.CodeInvalidParams},
		{"not a face URI", "agent-key", id, "file:///etc/passwd", jsonrpc.CodeInvalidParams},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			r := subscribe(row.key, row.id, row.uri)
			if r == nil || r.Error == nil || r.Error.Code != row.wantCode {
				t.Fatalf("%+v, want error %d (%s)", r, row.wantCode, row.reason)
			}
		})
	}
	t.Run("a GET without a session stays 405", func(t *testing.T) {
		if resp := openStream(t, ctx, env.MCPURL, "agent-key", ""); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("HTTP %d, want 405", resp.StatusCode)
		}
	})
	t.Run("a second GET of a session replaces the first", func(t *testing.T) {
		sid := sessionRaw(t, env.MCPURL, "other-key")
		first := openStream(t, ctx, env.MCPURL, "other-key", sid)
		if first.StatusCode != http.StatusOK || first.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("first GET: HTTP %d %s", first.StatusCode, first.Header.Get("Content-Type"))
		}
		br := bufio.NewReader(first.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "id: ") {
			t.Fatalf("the stream does not open with a priming event: %q %v", line, err)
		}
		second := openStream(t, ctx, env.MCPURL, "other-key", sid)
		if second.StatusCode != http.StatusOK {
			t.Fatalf("second GET: HTTP %d, want 200", second.StatusCode)
		}
		if _, err := io.Copy(io.Discard, br); err != nil {
			t.Fatalf("the first stream failed instead of ending: %v", err)
		}
	})
	t.Run("streams per caller", func(t *testing.T) {
		// denied: a caller no earlier client held a stream for.
		for i := range 16 {
			if resp := openStream(t, ctx, env.MCPURL, "denied-key", sessionRaw(t, env.MCPURL, "denied-key")); resp.StatusCode != http.StatusOK {
				t.Fatalf("stream %d: HTTP %d", i+1, resp.StatusCode)
			}
		}
		resp := openStream(t, ctx, env.MCPURL, "denied-key", sessionRaw(t, env.MCPURL, "denied-key"))
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the caller's 17th stream: HTTP %d, want 429", resp.StatusCode)
		}
		// Another caller is not held to that caller's bound.
		if resp := openStream(t, ctx, env.MCPURL, "other-key", sessionRaw(t, env.MCPURL, "other-key")); resp.StatusCode != http.StatusOK {
			t.Fatalf("another caller's stream: HTTP %d", resp.StatusCode)
		}
	})
}

// splitter sends GETs to streams and every other request to posts: a load
// balancer that spread one client's requests over two replicas.
type splitter struct {
	next    http.RoundTripper
	streams *url.URL
}

func (s splitter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = s.streams.Scheme, s.streams.Host, s.streams.Host
	}
	return s.next.RoundTrip(r)
}

// TestMCPSessionSubscriptionsAcrossReplicas: two replicas on a real
// redis-server; the client's POSTs (initialize, subscribe, unsubscribe)
// reach A, its GET stream B. B subscribes the upstream for what A
// recorded and relays its update; an unsubscribe at A ends B's upstream
// subscription.
func TestMCPSessionSubscriptionsAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	up := startSubsUpstream(t)
	envs := subsReplicas(t, up, subsPolicy(sessionKeyFile(t)), rs.Addr(), 2)
	ctx := longCtx(t)
	b, err := url.Parse(envs[1].MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	hc := httpClient(t, nil)
	hc.Transport = splitter{next: hc.Transport, streams: b}
	agent, agentUp := sessionClient(t, ctx, envs[0].MCPURL, "agent-key", hc)
	if err := agent.Subscribe(ctx, &mcp.SubscribeParams{URI: subDocA}); err != nil {
		t.Fatal(err)
	}
	if !fireUntil(ctx, up.mcp, []string{"doc://a"}, agentUp.ch, subDocA) {
		t.Fatalf("the update never reached the stream on the other replica; got %v", agentUp.got())
	}
	if err := agent.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: subDocA}); err != nil {
		t.Fatal(err)
	}
	if err := poll(10*time.Second, func() error {
		if n := up.subscribed("doc://a"); n != 0 {
			return fmt.Errorf("doc://a still subscribed %d times at the upstream", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("an unsubscribe at A did not end B's upstream subscription: %v", err)
	}
}

// TestMCPSessionSubscriptionsEverything: server-everything over
// streamable HTTP as the upstream (its subscribed resources update every
// 5 s once toggle-subscriber-updates is called), the go-sdk client on
// 2025-11-25 with a face session.
func TestMCPSessionSubscriptionsEverything(t *testing.T) {
	node, script := everythingNode(t)
	upURL := startEverythingHTTP(t, node, script)
	p := subsPolicy(sessionKeyFile(t))
	p.Authz.Callers["agent"] = policy.ToolAccess{Allow: []string{"ev_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}}
	var opts []gatewaytest.Option
	for _, tool := range []string{"echo", "toggle-subscriber-updates"} {
		opts = append(opts, gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: "ev_" + tool, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: upURL},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: upURL, Tool: tool}}}
		}))
	}
	env := gatewaytest.Start(t, append(opts, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))...)
	ctx := longCtx(t)
	var agent *mcp.ClientSession
	var agentUp *updates
	if err := poll(60*time.Second, func() error {
		cs, u := sessionClient(t, ctx, env.MCPURL, "agent-key", nil)
		if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
			cs.Close()
			return fmt.Errorf("resources.subscribe not declared yet: %+v", c.Resources)
		}
		agent, agentUp = cs, u
		return nil
	}); err != nil {
		t.Fatalf("the upstream did not come up: %v", err)
	}
	if err := agent.Subscribe(ctx, &mcp.SubscribeParams{URI: evDoc}); err != nil {
		t.Fatal(err)
	}
	if res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("toggle-subscriber-updates: %v %+v", err, res)
	}
	select {
	case uri := <-agentUp.ch:
		if uri != evDoc {
			t.Fatalf("notifications/resources/updated for %q, want the face's URI %q", uri, evDoc)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("no notifications/resources/updated reached the session's stream")
	}
}
