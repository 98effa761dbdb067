package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// subscribeFederation is a gateway fronting server-everything over
// streamable HTTP (tools echo, toggle-subscriber-updates and
// gzip-file-as-resource imported under ev_) with two callers: agent (its
// tools and resources) and denied (every resource URI allowed, ev_'s tools
// denied: the upstream is out of its view).
func subscribeFederation(t *testing.T) (env *gatewaytest.Env, ctx context.Context) {
	t.Helper()
	node, script := everythingNode(t)
	url := startEverythingHTTP(t, node, script)
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "denied", SHA256: policy.HashAPIKey("denied-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":  {Allow: []string{"ev_*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}},
		"denied": {Allow: []string{"*"}, Deny: []string{"ev_*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
	}}
	var opts []gatewaytest.Option
	for _, tool := range []string{"echo", "toggle-subscriber-updates", "gzip-file-as-resource"} {
		opts = append(opts, gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: "ev_" + tool, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: tool}}}
		}))
	}
	env = gatewaytest.Start(t, append(opts, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))...)
	ctx = testCtx(t)
	// What the gateway declares waits for nothing: the first initialize
	// starts reading the upstream's capabilities, a later one declares them.
	if err := poll(60*time.Second, func() error {
		cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})
		if err != nil {
			return err
		}
		defer cs.Close()
		if c := cs.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe {
			return fmt.Errorf("resources.subscribe not declared yet: %+v", c.Resources)
		}
		return nil
	}); err != nil {
		t.Fatalf("the upstream did not come up: %v", err)
	}
	return env, ctx
}

// listenRaw sends one subscriptions/listen for uris as caller key and
// returns its error reply (nil: none before the stream's first message).
func listenRaw(t *testing.T, url, key string, uris []string) *rpcReply {
	t.Helper()
	quoted := make([]string, len(uris))
	for i, u := range uris {
		quoted[i] = `"` + u + `"`
	}
	h, body := mcpRevisionRequest("2026-07-28", "subscriptions/listen",
		`{"notifications":{"resourceSubscriptions":[`+strings.Join(quoted, ",")+`]}}`)
	h.Set("Authorization", "Bearer "+key)
	_, _, r := mcpPost(t, url, h, body)
	return r
}

// TestMCPResourceSubscriptions: a 2026-07-28 caller (the go-sdk client)
// subscribes to a federated resource on its subscriptions/listen stream
// and the upstream's notifications/resources/updated reach it with the
// face's URI; a 2025-11-25 caller, with no stream to hear them on, is
// declared no subscriptions and refused resources/subscribe; a caller
// whose view excludes the upstream cannot subscribe to its resource; a
// caller's subscriptions are bounded.
func TestMCPResourceSubscriptions(t *testing.T) {
	env, ctx := subscribeFederation(t)
	updated := make(chan string, 16)
	agent := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}},
		client: &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		}}})
	if c := agent.InitializeResult().Capabilities; c.Resources == nil || !c.Resources.Subscribe || !c.Resources.ListChanged {
		t.Fatalf("a 2026-07-28 caller is not declared resources.subscribe and listChanged: %+v", c.Resources)
	}
	if err := agent.Subscribe(ctx, &mcp.SubscribeParams{URI: evDoc}); err != nil {
		t.Fatal(err)
	}
	// server-everything sends its subscribers' updates once the session
	// that subscribed (the gateway's) calls this tool, then every 5 s.
	if res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("toggle-subscriber-updates: %v %+v", err, res)
	}
	select {
	case uri := <-updated:
		if uri != evDoc {
			t.Fatalf("notifications/resources/updated for %q, want the face's URI %q", uri, evDoc)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("no notifications/resources/updated reached the subscriber")
	}

	old := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}, version: "2025-11-25"})
	if c := old.InitializeResult().Capabilities; c.Resources == nil || c.Resources.Subscribe || c.Resources.ListChanged {
		t.Fatalf("a 2025-11-25 caller (no stream on a stateless face) is declared %+v", c.Resources)
	}
	var rpc *jsonrpc.Error
	if err := old.Subscribe(ctx, &mcp.SubscribeParams{URI: evDoc}); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("resources/subscribe under 2025-11-25: %v, want method not found", err)
	}

	for _, c := range []struct {
		key    string
		uris   []string
		code   int64
		reason string
	}{
		{"denied-key", []string{evDoc}, jsonrpc.CodeInvalidParams, "the upstream is out of the caller's view: not found, as a read"},
		{"agent-key", []string{"flowdrop-mcp://zz_/demo://resource/static/document/architecture.md"}, jsonrpc.CodeInvalidParams, "no upstream has the namespace"},
		{"agent-key", manyURIs(65), mcpapi.MCPCodeSubscriptionLimit, "over the per-caller bound (64)"},
	} {
		r := listenRaw(t, env.MCPURL, c.key, c.uris)
		if r == nil || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s: reply %+v, want error %d", c.reason, r, c.code)
		}
	}
}

// manyURIs are n distinct face URIs of ev_'s documents.
func manyURIs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("flowdrop-mcp://ev_/demo://resource/dynamic/text/%d", i+1)
	}
	return out
}

// TestMCPResourceListChangedRelay: server-everything's
// gzip-file-as-resource adds a resource to its session and says so
// (notifications/resources/list_changed on the gateway's standing
// stream): the gateway's kept listing is stale at once (the new resource
// is listed through it) and a 2026-07-28 caller listening for resource
// list changes hears it.
func TestMCPResourceListChangedRelay(t *testing.T) {
	env, ctx := subscribeFederation(t)
	changed := make(chan struct{}, 16)
	agent := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}},
		client: &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}}})
	const added = "flowdrop-mcp://ev_/demo://resource/session/flowdrop.gz"
	listed := func() bool {
		list, err := agent.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Resources {
			if r.URI == added {
				return true
			}
		}
		return false
	}
	if listed() {
		t.Fatal("the session resource is listed before it is made")
	}
	res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "ev_gzip-file-as-resource",
		Arguments: map[string]any{"name": "flowdrop.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}})
	if err != nil || res.IsError {
		t.Fatalf("gzip-file-as-resource: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/list_changed reached the listening caller")
	}
	// The kept listing (reused for a minute otherwise) was read again.
	if !listed() {
		t.Fatal("the gateway still lists the upstream's resources as before the change")
	}
}
