package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// countedUpstream is a real go-sdk MCP server over streamable HTTP on
// 127.0.0.1 with a tool and a prompt, counting the requests it answers by
// method.
type countedUpstream struct {
	mcp    *mcp.Server
	url    string
	mu     sync.Mutex
	counts map[string]int
}

func (u *countedUpstream) count(method string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[method]
}

func startCountedUpstream(t *testing.T) *countedUpstream {
	t.Helper()
	u := &countedUpstream{counts: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "counted", Version: "1"}, nil)
	u.mcp = s
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "doc"}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "doc://a", Name: "a"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "doc://{name}", Name: "docs"}, read)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			u.mu.Lock()
			u.counts[method]++
			u.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	u.url = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// stalledUpstream is an MCP endpoint that never answers (it holds each
// request until the test ends), counting the requests it got.
type stalledUpstream struct {
	url      string
	requests atomic.Int64
}

func startStalledUpstream(t *testing.T) *stalledUpstream {
	t.Helper()
	u := &stalledUpstream{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	u.url = srv.URL
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// servePromptsStdioUpstream is the stdio helper's "prompts" mode: a
// go-sdk server with prompt hello and tool addprompt, which adds prompt
// added (its clients hear notifications/prompts/list_changed).
func servePromptsStdioUpstream() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-prompts", Version: "1"}, nil)
	hello := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	}
	s.AddPrompt(&mcp.Prompt{Name: "hello"}, hello)
	mcp.AddTool(s, &mcp.Tool{Name: "addprompt"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		s.AddPrompt(&mcp.Prompt{Name: "added"}, hello)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// TestMCPFederationCache: what the face knows of its upstreams is kept
// (server/mcpapi/fedcache.go). initialize answers from it without waiting
// on an upstream that stalls, and a flood of initializes reaches that
// upstream once; a prompt listing is reused, prompts/get on a listed
// prompt costing no prompts/list, on one it lacks one (bounded), and so
// are resource and template listings; a stdio
// upstream's
// notifications/prompts/list_changed makes its new prompt listed at once.
func TestMCPFederationCache(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stalled := startStalledUpstream(t)
	counted := startCountedUpstream(t)
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"agent": {Allow: []string{"*"},
		Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}}}}
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{
		"prompts": {Path: self, Env: map[string]string{stdioUpstreamEnv: "prompts", stdioStartsEnv: t.TempDir() + "/starts"}},
	}
	imported := func(name, url, tool string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: tool}}}
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
		imported("sl_echo", stalled.url, "echo"), imported("ct_echo", counted.url, "echo"), imported("sp_addprompt", "stdio://prompts", "addprompt"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func() (*mcp.ClientSession, time.Duration) {
		start := time.Now()
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
		t.Cleanup(func() { cs.Close() })
		return cs, time.Since(start)
	}
	// Well under the 5 s an upstream read may take.
	const initializeBound = 1500 * time.Millisecond

	t.Run("initialize-does-not-wait", func(t *testing.T) {
		// Nothing is known yet of any upstream: the first initialize
		// declares no prompts, and starts reading them in the background.
		if _, took := connect(); took > initializeBound {
			t.Fatalf("initialize took %v with an upstream stalling its initialize; want under %v", took, initializeBound)
		}
		// Once the counted upstream is read, initialize declares its
		// prompts — still without waiting on the stalled one.
		if err := poll(10*time.Second, func() error {
			cs, took := connect()
			if took > initializeBound {
				t.Fatalf("initialize took %v with an upstream stalling its initialize; want under %v", took, initializeBound)
			}
			if cs.InitializeResult().Capabilities.Prompts == nil {
				return fmt.Errorf("initialize declares no prompts yet")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("initialize-flood", func(t *testing.T) {
		// The gateway's first read of the stalled upstream is still under
		// way (or failed less than 5 s ago): initializes add none.
		stalledBefore, countedBefore := stalled.requests.Load(), counted.count("initialize")
		start := time.Now()
		for range 20 {
			cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
			if err != nil {
				t.Fatal(err)
			}
			cs.Close()
		}
		if took := time.Since(start); took > 2*initializeBound {
			t.Fatalf("20 initializes took %v; want under %v", took, 2*initializeBound)
		}
		// At most one: the read under way may fail and, federationRetry
		// later, one initialize may start the next (on a loaded machine the
		// subtest above can outlast that); without the guard each of the
		// 20 would start one.
		if n := stalled.requests.Load() - stalledBefore; n > 1 {
			t.Fatalf("20 gateway initializes sent the stalled upstream %d requests; want at most 1 (one read is under way, or one retry after it failed)", n)
		}
		if n := counted.count("initialize") - countedBefore; n != 0 {
			t.Fatalf("20 gateway initializes sent the counted upstream %d initialize requests; want 0 (its session is live)", n)
		}
		if n := counted.count("prompts/list"); n != 0 {
			t.Fatalf("initializes listed the upstream's prompts %d times; want 0", n)
		}
	})

	agent, _ := connect()
	t.Run("prompts-get-uses-the-listing", func(t *testing.T) {
		list, err := agent.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.Prompts, func(p *mcp.Prompt) bool { return p.Name == "ct_greet" }) {
			t.Fatalf("prompts %+v, want ct_greet", list.Prompts)
		}
		lists := counted.count("prompts/list")
		for range 3 {
			r, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ct_greet", Arguments: map[string]string{"who": "you"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc, _ := r.Messages[0].Content.(*mcp.TextContent); tc == nil || tc.Text != "hello you" {
				t.Fatalf("get: %+v", r.Messages[0].Content)
			}
		}
		if _, err := agent.ListPrompts(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if n := counted.count("prompts/list") - lists; n != 0 {
			t.Fatalf("3 prompts/get and a prompts/list cost %d upstream prompts/list; want 0 (the listing is kept)", n)
		}
		if n := counted.count("prompts/get"); n != 3 {
			t.Fatalf("the upstream answered %d prompts/get; want 3", n)
		}
	})

	t.Run("resource-listings-kept", func(t *testing.T) {
		for range 3 {
			rs, err := agent.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs.Resources) != 1 || rs.Resources[0].URI != "flowdrop-mcp://ct_/doc://a" {
				t.Fatalf("resources %+v, want flowdrop-mcp://ct_/doc://a alone", rs.Resources)
			}
			ts, err := agent.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts.ResourceTemplates) != 1 || ts.ResourceTemplates[0].URITemplate != "flowdrop-mcp://ct_/doc://{name}" {
				t.Fatalf("templates %+v, want flowdrop-mcp://ct_/doc://{name} alone", ts.ResourceTemplates)
			}
		}
		if r, tl := counted.count("resources/list"), counted.count("resources/templates/list"); r != 1 || tl != 1 {
			t.Fatalf("3 resources/list and 3 resources/templates/list cost the upstream %d and %d; want 1 and 1", r, tl)
		}
	})

	t.Run("prompts-added-later", func(t *testing.T) {
		// An HTTP upstream's list_changed is heard on the session's standing
		// stream: a prompt it adds is listed once it is; the listing is then
		// kept, so a get of the prompt, and gets of a name no upstream has,
		// cost no further listing (a caller cannot make the gateway list per
		// request).
		time.Sleep(2 * time.Second) // past the least age of a listing read again on a miss
		counted.mcp.AddPrompt(&mcp.Prompt{Name: "later"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "later"}}}}, nil
		})
		if err := poll(20*time.Second, func() error {
			list, err := agent.ListPrompts(ctx, nil)
			if err != nil {
				return err
			}
			for _, p := range list.Prompts {
				if p.Name == "ct_later" {
					return nil
				}
			}
			return errors.New("ct_later not listed yet")
		}); err != nil {
			t.Fatalf("the upstream's notifications/prompts/list_changed was not heard: %v", err)
		}
		lists := counted.count("prompts/list")
		if _, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ct_later"}); err != nil {
			t.Fatalf("get of a prompt added after the listing was kept: %v", err)
		}
		for range 5 {
			if _, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ct_nosuch"}); err == nil {
				t.Fatal("get of a prompt no upstream has: no error")
			}
		}
		if n := counted.count("prompts/list") - lists; n != 0 {
			t.Fatalf("a get of the new prompt and 5 of an unknown one cost %d more upstream prompts/list; want 0", n)
		}
	})

	t.Run("list-changed", func(t *testing.T) {
		names := func() []string {
			list, err := agent.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range list.Prompts {
				out = append(out, p.Name)
			}
			return out
		}
		if got := names(); !slices.Contains(got, "sp_hello") || slices.Contains(got, "sp_added") {
			t.Fatalf("prompts %v, want sp_hello and not sp_added", got)
		}
		if _, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "sp_addprompt", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		// Well within the listing's TTL: only the notification explains it.
		if err := poll(3*time.Second, func() error {
			if got := names(); !slices.Contains(got, "sp_added") {
				return fmt.Errorf("prompts %v after the upstream said they changed, want sp_added", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
