package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// startEverythingSSE runs server-everything over the legacy HTTP+SSE
// transport (2024-11-05) and returns its SSE endpoint's URL.
func startEverythingSSE(t *testing.T, node, script string) string {
	return "http://" + gatewaytest.StartEverything(t, node, script, "sse") + "/sse"
}

// TestMCPLegacySSEUpstream fronts server-everything over the legacy
// HTTP+SSE transport, once named in the tools' spec (sse_) and once
// detected (det_: the endpoint refuses the streamable POST, so the gateway
// falls back to its event stream), and drives it with the go-sdk client:
// a tools/call and a federated resources/read reach the upstream through
// each, and a caller denied the upstream's tools sees none of its
// resources.
func TestMCPLegacySSEUpstream(t *testing.T) {
	node, script := everythingNode(t)
	sseURL := startEverythingSSE(t, node, script)
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "denied", SHA256: policy.HashAPIKey("denied-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":  {Allow: []string{"*"}, Resources: policy.URIAccess{Allow: []string{"flowdrop-mcp://*"}}},
		"denied": {Allow: []string{"*"}, Deny: []string{"sse_*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
	}}
	imported := func(name, tool string, tr registry.MCPTransport) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: sseURL},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: sseURL, Tool: tool, Transport: tr}}}
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
		imported("sse_echo", "echo", registry.MCPTransportSSE), imported("det_echo", "echo", registry.MCPTransportDetect))
	ctx := testCtx(t)
	connect := func(key string) *mcp.ClientSession {
		return mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer " + key}}})
	}
	agent, denied := connect("agent-key"), connect("denied-key")

	for _, tool := range []string{"sse_echo", "det_echo"} {
		res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "over " + tool}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "over "+tool) {
			t.Fatalf("%s: the upstream's echo did not come back: %+v", tool, res)
		}
	}
	for _, ns := range []string{"sse_", "det_"} {
		uri := "flowdrop-mcp://" + ns + "/demo://resource/static/document/architecture.md"
		res, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("reading %s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text == "" {
			t.Fatalf("reading %s: %+v", uri, res.Contents)
		}
	}
	// sse_ is out of the denied caller's view; det_ (its tools allowed) is in.
	list, err := denied.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sawDet bool
	for _, r := range list.Resources {
		if strings.HasPrefix(r.URI, "flowdrop-mcp://sse_/") {
			t.Fatalf("the denied caller is listed %s", r.URI)
		}
		sawDet = sawDet || strings.HasPrefix(r.URI, "flowdrop-mcp://det_/")
	}
	if !sawDet {
		t.Fatalf("the denied caller is not listed the upstream in its view: %d resources", len(list.Resources))
	}
	if _, err := denied.ReadResource(ctx, &mcp.ReadResourceParams{URI: "flowdrop-mcp://sse_/demo://resource/static/document/architecture.md"}); err == nil {
		t.Fatal("the denied caller read a resource of an upstream out of its view")
	}
}

// TestMCPLegacySSEUpstreamProgress: server-everything's progress for a
// call, over the legacy HTTP+SSE transport (its one stream carries them
// beside the answers), reaches the MCP caller that asked, as
// notifications/progress for the caller's own token, in order; the
// upstream is sent the gateway's token (Caller.WatchProgress), never the
// caller's. Every step arrives, the last too, though the upstream sends it
// just before the answer (the gateway takes it off the connection before
// the SDK reads the answer: internal/mcpupstream/side.go).
func TestMCPLegacySSEUpstreamProgress(t *testing.T) {
	node, script := everythingNode(t)
	sseURL := startEverythingSSE(t, node, script)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(func(string) registry.Tool {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		return registry.Tool{Name: "sse_long", InputSchema: schema,
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: sseURL, Tool: "trigger-long-running-operation", Transport: registry.MCPTransportSSE}}}
	}))
	ctx := testCtx(t)
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}}})
	const token = "caller-token-sse-1"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sse_long", Arguments: map[string]any{"duration": 0.3, "steps": 3},
		Meta: mcp.Meta{"progressToken": token}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	// The caller's own client may handle them after the answer returned
	// the call: wait for all three (or the test's deadline).
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of the upstream's 3 progress notifications reached the caller", n)
		case <-time.After(5 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range got {
		if p.ProgressToken != token || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("notification %d: token %v progress %v total %v; want the caller's token, step %d of 3, in order", i, p.ProgressToken, p.Progress, p.Total, i+1)
		}
	}
}
