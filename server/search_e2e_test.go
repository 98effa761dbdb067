package server_test

// Search for large catalogs end to end: discovery mode on the MCP face
// (the go-sdk's client against a real gateway over loopback) and
// ToolRegistryService/SearchTools on gRPC, over one index.

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// searchEnv: "agent" gets discovery mode by name, "explorer" by role,
// "lister" does not; agent and explorer may call create_* and update_*
// but not update_settings; the operator (admin) registers tools.
func searchEnv(t *testing.T) *gatewaytest.Env {
	return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(searchPolicy()))
}

func searchPolicy() server.PolicyConfig {
	p := server.DemoPolicy()
	p.Admin.ListenAddr = ""
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "explorer", SHA256: policy.HashAPIKey("explorer-key"), Roles: []string{policy.RoleInvoker, "large-catalog"}},
		{Name: "lister", SHA256: policy.HashAPIKey("lister-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "operator", SHA256: policy.HashAPIKey("operator-key"), Roles: []string{policy.RoleAdmin}},
	}}
	limited := policy.ToolAccess{Allow: []string{"create_*", "update_*", "travel.*"}, Deny: []string{"update_settings"}}
	p.Authz = policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}},
		Callers: map[string]policy.ToolAccess{"agent": limited, "explorer": limited}}
	p.MCP.Discovery = mcpapi.DiscoveryPolicy{Callers: []string{"agent"}, Roles: []string{"large-catalog"}}
	return p
}

func bearerKey(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// callMeta calls a meta-tool and decodes its structured content into v.
func callMeta(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, v any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	if v != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: structured content %s: %v", tool, b, err)
		}
		var fromText any
		if err := json.Unmarshal([]byte(resultText(res)), &fromText); err != nil {
			t.Errorf("%s: the text content is not the structured content's JSON: %q", tool, resultText(res))
		}
	}
	return res
}

type searchOut struct {
	Tools []struct{ Name, Description string }
}

func hitNames(o searchOut) []string {
	var n []string
	for _, h := range o.Tools {
		n = append(n, h.Name)
	}
	return n
}

func TestMCPDiscoveryMode(t *testing.T) {
	env := searchEnv(t)
	ctx := testCtx(t)
	meta := []string{registry.DescribeToolName, registry.SearchToolsName}

	t.Run("tools/list", func(t *testing.T) {
		for _, tc := range []struct {
			key, reason string
			want        []string
		}{
			{"agent-key", "a caller the policy names by subject is offered the meta-tools only", meta},
			{"explorer-key", "so is a caller holding a discovery role", meta},
			{"lister-key", "any other caller gets the full list, without the meta-tools", []string{"apply_ops", "create_note", "run_command", "update_settings"}},
			{"operator-key", "a caller that may not invoke tools is offered nothing in either mode", nil},
		} {
			cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey(tc.key)})
			if diff := cmp.Diff(tc.want, toolNames(t, ctx, cs)); diff != "" {
				t.Errorf("%s: tools/list (-want +got) (%s):\n%s", tc.key, tc.reason, diff)
			}
		}
	})

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("agent-key")})
	t.Run("search is ranked and filtered", func(t *testing.T) {
		var out searchOut
		callMeta(t, cs, registry.SearchToolsName, map[string]any{"query": "create a note with tags"}, &out)
		if len(out.Tools) == 0 || out.Tools[0].Name != "create_note" || out.Tools[0].Description != "Create a note with a title, optional tags and a body." {
			t.Errorf("search: %+v, want create_note first with its short description", out)
		}
		for _, q := range []string{"update settings", "user settings keys", "settings", "run shell command"} {
			var o searchOut
			callMeta(t, cs, registry.SearchToolsName, map[string]any{"query": q, "limit": 100}, &o)
			for _, n := range hitNames(o) {
				if n == "update_settings" || n == "run_command" || n == "apply_ops" {
					t.Errorf("search %q returned %s, which agent may not call", q, n)
				}
			}
		}
	})

	t.Run("describe", func(t *testing.T) {
		var tool struct {
			Name        string
			InputSchema struct {
				Type       string
				Properties map[string]any
			}
		}
		callMeta(t, cs, registry.DescribeToolName, map[string]any{"name": "create_note"}, &tool)
		if tool.Name != "create_note" || tool.InputSchema.Type != "object" || tool.InputSchema.Properties["title"] == nil {
			t.Errorf("describe create_note: %+v", tool)
		}
		// A denied tool is described exactly as one that does not exist.
		denied := callMeta(t, cs, registry.DescribeToolName, map[string]any{"name": "update_settings"}, nil)
		missing := callMeta(t, cs, registry.DescribeToolName, map[string]any{"name": "no_such_tool"}, nil)
		if !denied.IsError || !missing.IsError || denied.Meta[mcpapi.MCPMetaReason] != "tool-not-found" ||
			strings.ReplaceAll(resultText(denied), "update_settings", "X") != strings.ReplaceAll(resultText(missing), "no_such_tool", "X") {
			t.Errorf("describe denied %v %q / missing %v %q: want the same tool-not-found error", denied.IsError, resultText(denied), missing.IsError, resultText(missing))
		}
	})

	t.Run("calls go to the real tools under policy", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "found by search"}})
		if err != nil || res.IsError {
			t.Fatalf("create_note: %v %+v", err, res)
		}
		if calls := env.Backend.CallsFor("create_note"); len(calls) != 1 || calls[0].Request.GetCaller().GetSubject() != "agent" {
			t.Errorf("backend calls %v, want one from agent", calls)
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "update_settings", Arguments: map[string]any{"settings": map[string]any{}}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || !strings.Contains(werr.Message, "denied") {
			t.Errorf("update_settings in discovery mode: %v, want the policy's denial", err)
		}
	})

	t.Run("bad arguments are tool errors", func(t *testing.T) {
		for _, tc := range []struct {
			reason, tool string
			args         map[string]any
			want         string
		}{
			{"no query", registry.SearchToolsName, map[string]any{}, "query is required"},
			{"empty query", registry.SearchToolsName, map[string]any{"query": " "}, "query is required"},
			{"query over the bound", registry.SearchToolsName, map[string]any{"query": strings.Repeat("x", 1025)}, "at most 1024"},
			{"limit below 1", registry.SearchToolsName, map[string]any{"query": "note", "limit": 0}, "limit must be at least 1"},
			{"limit not an integer", registry.SearchToolsName, map[string]any{"query": "note", "limit": 1.5}, "invalid arguments"},
			{"unknown argument", registry.SearchToolsName, map[string]any{"query": "note", "tool": "x"}, "unknown field"},
			{"no name", registry.DescribeToolName, map[string]any{}, "name is required"},
		} {
			res := callMeta(t, cs, tc.tool, tc.args, nil)
			if !res.IsError || !strings.Contains(resultText(res), tc.want) || res.Meta[mcpapi.MCPMetaReason] != "arguments-invalid" {
				t.Errorf("%s: isError %v %q %v, want arguments-invalid saying %q", tc.reason, res.IsError, resultText(res), res.Meta, tc.want)
			}
		}
	})

	t.Run("outside discovery mode the meta-tools do not exist", func(t *testing.T) {
		lister := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("lister-key")})
		_, err := lister.CallTool(ctx, &mcp.CallToolParams{Name: registry.SearchToolsName, Arguments: map[string]any{"query": "note"}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "unknown tool") {
			t.Errorf("lister calling the search meta-tool: %v, want unknown tool", err)
		}
	})

	t.Run("the index follows the registry", func(t *testing.T) {
		rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
		schema, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"departureAirport": map[string]any{"type": "string"}}})
		tool := &gatewayv1.Tool{Name: "travel.book_flight", Description: "Book a flight seat.", Backend: env.BackendAddr, InputSchema: schema}
		if _, err := rc.RegisterTool(withKey("operator-key"), &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatal(err)
		}
		var o searchOut
		callMeta(t, cs, registry.SearchToolsName, map[string]any{"query": "departure airport"}, &o)
		if !slices.Contains(hitNames(o), "travel.book_flight") {
			t.Errorf("after RegisterTool: %v", hitNames(o))
		}
		if _, err := rc.DeleteTool(withKey("operator-key"), &gatewayv1.DeleteToolRequest{Name: tool.Name}); err != nil {
			t.Fatal(err)
		}
		o = searchOut{}
		callMeta(t, cs, registry.SearchToolsName, map[string]any{"query": "departure airport flight"}, &o)
		if len(o.Tools) != 0 {
			t.Errorf("after DeleteTool: %v", hitNames(o))
		}
	})

	t.Run("a reload changes who gets discovery mode", func(t *testing.T) {
		p := searchPolicy()
		p.MCP.Discovery = mcpapi.DiscoveryPolicy{Callers: []string{"lister"}}
		if err := env.Gateway.ReloadPolicy(p); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string][]string{"lister-key": meta, "agent-key": {"create_note"}} {
			c := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey(key)})
			if diff := cmp.Diff(want, toolNames(t, ctx, c)); diff != "" {
				t.Errorf("%s after the reload (-want +got):\n%s", key, diff)
			}
		}
	})

	t.Run("the meta-tools' names cannot be registered", func(t *testing.T) {
		rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		_, err := rc.RegisterTool(withKey("operator-key"), &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: registry.SearchToolsName, Backend: env.BackendAddr, InputSchema: schema}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("registering %s: %v, want InvalidArgument (reserved)", registry.SearchToolsName, err)
		}
	})
}

func TestGRPCSearchTools(t *testing.T) {
	env := searchEnv(t)
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	search := func(key, q string, limit int32) ([]string, error) {
		resp, err := rc.SearchTools(withKey(key), &gatewayv1.SearchToolsRequest{Query: q, Limit: limit})
		var n []string
		for _, h := range resp.GetHits() {
			n = append(n, h.GetName())
			if h.GetScore() <= 0 {
				t.Errorf("%s: score %v", h.GetName(), h.GetScore())
			}
		}
		return n, err
	}
	for _, tc := range []struct {
		reason, key, query string
		limit              int32
		want               []string
	}{
		{"the same ranking as the MCP face", "agent-key", "create a note with tags", 1, []string{"create_note"}},
		{"a denied tool never appears", "agent-key", "settings", 100, nil},
		{"an allowed caller sees it", "lister-key", "settings", 1, []string{"update_settings"}},
		{"the admin role alone invokes nothing, so sees nothing (as ListTools)", "operator-key", "note", 10, nil},
	} {
		got, err := search(tc.key, tc.query, tc.limit)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.reason, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		reason, query string
		limit         int32
		field         string
	}{
		{"an empty query", "", 0, "query"},
		{"a query over the bound", strings.Repeat("q", 1025), 0, "query"},
		{"a negative limit", "note", -1, "limit"},
	} {
		_, err := search("agent-key", tc.query, tc.limit)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.field) {
			t.Errorf("%s: %v, want InvalidArgument naming %s", tc.reason, err, tc.field)
		}
	}
	if _, err := search("", "note", 1); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no credentials: %v", err)
	}
}

// TestMCPMetaToolsUnderPolicy: the meta-tools are held to the caller's role
// (a caller without invoker is refused as tools/call refuses it) and rate
// limit (a bucket of their own per caller).
func TestMCPMetaToolsUnderPolicy(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
			{Name: "operator", SHA256: policy.HashAPIKey("operator-key"), Roles: []string{policy.RoleAdmin}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}}}
		c.Policy.RateLimit = policy.RateLimitConfig{Tools: []policy.ToolRate{{Match: registry.SearchToolsName, Rate: 0.001, Burst: 2}}}
		c.Policy.MCP.Discovery = mcpapi.DiscoveryPolicy{All: true}
	}))
	ctx := testCtx(t)
	op := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("operator-key")})
	_, err := op.CallTool(ctx, &mcp.CallToolParams{Name: registry.SearchToolsName, Arguments: map[string]any{"query": "note"}})
	_, real := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("operator-key")}).CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "t"}})
	if err == nil || real == nil || !strings.Contains(err.Error(), `caller "operator" lacks a role`) || err.Error() != real.Error() {
		t.Errorf("operator (no invoker role) searching: %v; want the refusal a tools/call of a real tool gets (%v)", err, real)
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("agent-key")})
	for i := range 3 {
		res := callMeta(t, cs, registry.SearchToolsName, map[string]any{"query": "note"}, nil)
		limited := res.IsError && res.Meta[mcpapi.MCPMetaReason] == "rate-limited"
		if limited != (i == 2) {
			t.Errorf("search %d: isError %v %q %v; want only the third rate-limited (burst 2)", i+1, res.IsError, resultText(res), res.Meta)
		}
	}
	// The describe meta-tool has its own bucket (no override: not limited).
	if res := callMeta(t, cs, registry.DescribeToolName, map[string]any{"name": "create_note"}, nil); res.IsError {
		t.Errorf("describe after search was limited: %q", resultText(res))
	}
}

// TestMCPBundleDiscoveryMode: a bundle whose discovery is search offers
// everyone its endpoint serves the meta-tools instead of its list, even a
// caller the policy gives the full list on /mcp; search and describe see
// only the bundle's tools (a visible tool outside it is not found), and
// its tools are called by their names. /mcp itself is unchanged.
func TestMCPBundleDiscoveryMode(t *testing.T) {
	env := searchEnv(t)
	ctx := testCtx(t)
	if _, err := env.Store.PutBundle(ctx, registry.Bundle{Name: "notes", Tools: []string{"create_note", "apply_ops"},
		Discovery: registry.DiscoverySearch}, nil); err != nil {
		t.Fatal(err)
	}
	for range 200 { // the registry follows its store's watch
		if _, ok := env.Registry.Snapshot().Bundle("notes"); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	bundle := mustConnect(t, ctx, env.MCPURL+"/notes", mcpClientOpts{header: bearerKey("lister-key")})
	if diff := cmp.Diff([]string{registry.DescribeToolName, registry.SearchToolsName}, toolNames(t, ctx, bundle)); diff != "" {
		t.Errorf("tools/list on the search bundle (-want +got):\n%s", diff)
	}
	plain := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("lister-key")})
	if got := toolNames(t, ctx, plain); slices.Contains(got, registry.SearchToolsName) || !slices.Contains(got, "run_command") {
		t.Errorf("tools/list on /mcp = %v: the bundle's mode must not reach the full endpoint", got)
	}

	var out searchOut
	callMeta(t, bundle, registry.SearchToolsName, map[string]any{"query": "note shell command settings ops", "limit": 100}, &out)
	if got := hitNames(out); !slices.Contains(got, "create_note") || slices.Contains(got, "run_command") || slices.Contains(got, "update_settings") {
		t.Errorf("search on the bundle = %v: want only the bundle's tools", got)
	}
	if res := callMeta(t, bundle, registry.DescribeToolName, map[string]any{"name": "run_command"}, nil); !res.IsError {
		t.Errorf("describe run_command on the bundle: %q; want tool-not-found (outside the bundle)", resultText(res))
	}
	res, err := bundle.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "Ember &amp;amp; Oak"}})
	if err != nil || res.IsError {
		t.Fatalf("create_note through the search bundle: %v %v", err, res)
	}
}
