package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// bundleEnv is a gateway on both faces with an admin (who may also invoke
// every tool), an agent whose allow list narrows what it sees, and one
// labelled tool besides the demo tools.
func bundleEnv(t *testing.T) *gatewaytest.Env {
	return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(func(backend string) registry.Tool {
		tool := gatewaytest.ObjectTool("labelled_tool")(backend)
		tool.Labels = map[string]string{"team": "boards"}
		return tool
	}), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "admin", SHA256: policy.HashAPIKey("bundle-admin"), Roles: []string{policy.RoleAdmin, policy.RoleInvoker}},
			{Name: "agent", SHA256: policy.HashAPIKey("bundle-agent"), Roles: []string{policy.RoleInvoker}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}},
			Callers: map[string]policy.ToolAccess{"agent": {Allow: []string{"create_*", "update_*"}}}}
	}))
}

func asKey(t *testing.T, key string) (metadataCtx func() context.Context, header http.Header) {
	return func() context.Context { return metadata.AppendToOutgoingContext(testCtx(t), "x-api-key", key) },
		http.Header{"X-Api-Key": {key}}
}

// TestBundlesServedOnBothFaces: a bundle written over the registry API is
// served at once as its own MCP endpoint and as the bundle of ListTools
// and ExportTools; per-caller visibility applies inside it; a tool outside
// it cannot be called through its endpoint (answered exactly as a name
// that is not registered, by the SDK's path and the fast path alike); a
// change to it applies to the next request; a deleted or unknown bundle's
// endpoint answers 404 with a JSON-RPC error before authentication.
func TestBundlesServedOnBothFaces(t *testing.T) {
	t.Parallel()
	env := bundleEnv(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	adminCtx, adminHdr := asKey(t, "bundle-admin")
	agentCtx, agentHdr := asKey(t, "bundle-agent")

	put, err := reg.PutBundle(adminCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{
		Name: "notes", Description: "note taking", Tools: []string{"create_note", "run_command", "not_registered"}, Globs: []string{"update_*"}}})
	if err != nil {
		t.Fatalf("PutBundle: %v", err)
	}
	if !put.GetCreated() || put.GetBundle().GetRevision() == 0 {
		t.Errorf("PutBundle = %v, want created with a revision", put)
	}
	if _, err := reg.PutBundle(adminCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "boards", LabelSelectors: []string{"team=boards"}}}); err != nil {
		t.Fatalf("PutBundle by label: %v", err)
	}
	notesURL := env.MCPURL + "/notes"

	t.Run("listed per caller", func(t *testing.T) {
		for _, tc := range []struct {
			reason string
			ctx    func() context.Context
			header http.Header
			bundle string
			want   []string
		}{
			{"the bundle's registered tools, selected by list and glob", adminCtx, adminHdr, "notes", []string{"create_note", "run_command", "update_settings"}},
			{"per-caller visibility still applies inside a bundle", agentCtx, agentHdr, "notes", []string{"create_note", "update_settings"}},
			{"a bundle by label selector", adminCtx, adminHdr, "boards", []string{"labelled_tool"}},
			{"a caller whose allow list leaves nothing of the bundle sees nothing", agentCtx, agentHdr, "boards", nil},
		} {
			cs := mustConnect(t, tc.ctx(), env.MCPURL+"/"+tc.bundle, mcpClientOpts{header: tc.header})
			if diff := cmp.Diff(tc.want, toolNames(t, tc.ctx(), cs)); diff != "" {
				t.Errorf("MCP tools/list on /mcp/%s (-want +got) (%s):\n%s", tc.bundle, diff, tc.reason)
			}
			lr, err := reg.ListTools(tc.ctx(), &gatewayv1.ListToolsRequest{Bundle: tc.bundle})
			if err != nil {
				t.Fatalf("ListTools(bundle %s): %v", tc.bundle, err)
			}
			var got []string
			for _, tl := range lr.GetTools() {
				got = append(got, tl.GetName())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gRPC ListTools bundle %s (-want +got) (%s): the faces disagree:\n%s", tc.bundle, diff, tc.reason)
			}
			ex, err := reg.ExportTools(tc.ctx(), &gatewayv1.ExportToolsRequest{Format: "mcp", Bundle: tc.bundle})
			if err != nil {
				t.Fatalf("ExportTools(bundle %s): %v", tc.bundle, err)
			}
			var doc []struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal([]byte(ex.GetToolsJson()), &doc); err != nil {
				t.Fatalf("ExportTools document: %v", err)
			}
			got = nil
			for _, d := range doc {
				got = append(got, d.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gRPC ExportTools bundle %s (-want +got) (%s):\n%s", tc.bundle, diff, tc.reason)
			}
		}
		// The whole endpoint still lists everything.
		cs := mustConnect(t, adminCtx(), env.MCPURL, mcpClientOpts{header: adminHdr})
		if names := toolNames(t, adminCtx(), cs); !slices.Contains(names, "apply_ops") {
			t.Errorf("/mcp lists %v: a bundle must not narrow the whole endpoint", names)
		}
	})

	t.Run("calls", func(t *testing.T) {
		cs := mustConnect(t, adminCtx(), notesURL, mcpClientOpts{header: adminHdr})
		res, err := cs.CallTool(adminCtx(), &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "t"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call of a bundle's tool through its endpoint: %v %+v", err, res)
		}
		_, errOutside := cs.CallTool(adminCtx(), &mcp.CallToolParams{Name: "apply_ops", Arguments: map[string]any{}})
		_, errUnknown := cs.CallTool(adminCtx(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		var outside, unknown *jsonrpc.Error
		if !errors.As(errOutside, &outside) || !errors.As(errUnknown, &unknown) {
			t.Fatalf("tools/call outside the bundle = %v, of an unknown name = %v; want JSON-RPC errors", errOutside, errUnknown)
		}
		if outside.Code != unknown.Code || outside.Message != strings.ReplaceAll(unknown.Message, "no_such_tool", "apply_ops") {
			t.Errorf("outside the bundle: %d %q; unknown tool: %d %q: a tool outside the bundle must be answered as not found", outside.Code, outside.Message, unknown.Code, unknown.Message)
		}
		// The fast path (a single tools/call POST) answers the same.
		code, raw, reply := mcpPost(t, notesURL, adminHdr, toolsCall("apply_ops", `{}`))
		if code != http.StatusOK || reply == nil || reply.Error == nil || reply.Error.Code != outside.Code || reply.Error.Message != outside.Message {
			t.Errorf("raw tools/call outside the bundle: %d %s; want %d %q", code, raw, outside.Code, outside.Message)
		}
		if n := len(env.Backend.CallsFor("apply_ops")); n != 0 {
			t.Errorf("the backend got %d calls of a tool outside the bundle", n)
		}
		// The same tool through /mcp is served.
		if code, raw, reply := mcpPost(t, env.MCPURL, adminHdr, toolsCall("apply_ops", `{"ops":[]}`)); code != http.StatusOK || reply == nil || reply.Error != nil {
			t.Errorf("apply_ops through /mcp: %d %s", code, raw)
		}
		// A caller's allow list still refuses inside the bundle.
		agent := mustConnect(t, agentCtx(), notesURL, mcpClientOpts{header: agentHdr})
		if _, err := agent.CallTool(agentCtx(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "ls"}}); err == nil ||
			!strings.Contains(err.Error(), "not in the allow list") {
			t.Errorf("agent calling run_command in the bundle: %v, want the allow list's refusal", err)
		}
	})

	t.Run("unknown bundle", func(t *testing.T) {
		for _, tc := range []struct{ reason, path string }{
			{"a bundle that does not exist", "/nope"},
			{"a name no bundle can have", "/" + strings.Repeat("x", 65)},
			{"a nested path", "/notes/more"},
			{"an empty name", "/"},
		} {
			// No credentials: the 404 comes before authentication.
			code, raw, reply := mcpPost(t, env.MCPURL+tc.path, nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
			if code != http.StatusNotFound || reply == nil || reply.Error == nil || reply.Error.Code != mcpapi.MCPCodeBundleNotFound {
				t.Errorf("%s (%s): %d %s; want 404 with JSON-RPC error %d", tc.path, tc.reason, code, raw, mcpapi.MCPCodeBundleNotFound)
			}
			if len(raw) > 400 {
				t.Errorf("%s: %d-byte answer, want a bounded one", tc.path, len(raw))
			}
		}
		if _, err := reg.ListTools(adminCtx(), &gatewayv1.ListToolsRequest{Bundle: "nope"}); status.Code(err) != codes.NotFound {
			t.Errorf("ListTools of an unknown bundle: %v, want NotFound", err)
		}
		if _, err := reg.ExportTools(adminCtx(), &gatewayv1.ExportToolsRequest{Format: "openai", Bundle: "nope"}); status.Code(err) != codes.NotFound {
			t.Errorf("ExportTools of an unknown bundle: %v, want NotFound", err)
		}
	})

	t.Run("admin", func(t *testing.T) {
		if _, err := reg.PutBundle(agentCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "mine", Globs: []string{"*"}}}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("PutBundle by an invoker: %v, want PermissionDenied", err)
		}
		_, err := reg.PutBundle(adminCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "bad", Globs: []string{"[x"}}})
		var field string
		for _, d := range status.Convert(err).Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		if status.Code(err) != codes.InvalidArgument || field != "bundle.globs[0]" {
			t.Errorf("PutBundle of an invalid glob: %v (field %q), want InvalidArgument on bundle.globs[0]", err, field)
		}
		got, err := reg.GetBundle(adminCtx(), &gatewayv1.GetBundleRequest{Name: "notes"})
		if err != nil || got.GetBundle().GetDescription() != "note taking" || got.GetBundle().GetRevision() != put.GetBundle().GetRevision() {
			t.Errorf("GetBundle = %v, %v", got, err)
		}
		lb, err := reg.ListBundles(adminCtx(), &gatewayv1.ListBundlesRequest{})
		if err != nil || len(lb.GetBundles()) != 2 || lb.GetBundles()[0].GetName() != "boards" || lb.GetBundles()[1].GetName() != "notes" {
			t.Errorf("ListBundles = %v, %v; want boards, notes", lb, err)
		}
		stale := int64(1)
		_, err = reg.PutBundle(adminCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "notes", Globs: []string{"*"}}, ExpectedRevision: &stale})
		if status.Code(err) != codes.Aborted {
			t.Errorf("PutBundle at a stale revision: %v, want Aborted", err)
		}
	})

	t.Run("changed and deleted", func(t *testing.T) {
		rev := put.GetBundle().GetRevision()
		if _, err := reg.PutBundle(adminCtx(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "notes", Tools: []string{"apply_ops"}}, ExpectedRevision: &rev}); err != nil {
			t.Fatalf("PutBundle update: %v", err)
		}
		cs := mustConnect(t, adminCtx(), notesURL, mcpClientOpts{header: adminHdr})
		if diff := cmp.Diff([]string{"apply_ops"}, toolNames(t, adminCtx(), cs)); diff != "" {
			t.Errorf("tools/list after the bundle changed (-want +got):\n%s", diff)
		}
		if _, err := reg.DeleteBundle(adminCtx(), &gatewayv1.DeleteBundleRequest{Name: "notes"}); err != nil {
			t.Fatalf("DeleteBundle: %v", err)
		}
		if code, raw, _ := mcpPost(t, notesURL, adminHdr, toolsCall("apply_ops", `{"ops":[]}`)); code != http.StatusNotFound {
			t.Errorf("a call to a deleted bundle's endpoint: %d %s, want 404", code, raw)
		}
		if _, err := reg.GetBundle(adminCtx(), &gatewayv1.GetBundleRequest{Name: "notes"}); status.Code(err) != codes.NotFound {
			t.Errorf("GetBundle after delete: %v, want NotFound", err)
		}
	})
}

// TestBundleAccessLogNamesTheBundle: a request through a bundle's endpoint
// is access-logged with the bundle (mcp.bundle); one through /mcp is not.
func TestBundleAccessLogNamesTheBundle(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithLogOutput(logs))
	if _, err := env.Registry.PutBundle(context.Background(), registry.Bundle{Name: "notes_b", Tools: []string{"create_note"}}, nil); err != nil {
		t.Fatal(err)
	}
	if code, raw, _ := mcpPost(t, env.MCPURL+"/notes_b", nil, toolsCall("create_note", `{"title":"x"}`)); code != http.StatusOK {
		t.Fatalf("tools/call through the bundle: %d %s", code, raw)
	}
	if code, raw, _ := mcpPost(t, env.MCPURL, nil, toolsCall("create_note", `{"title":"y"}`)); code != http.StatusOK {
		t.Fatalf("tools/call through /mcp: %d %s", code, raw)
	}
	var inBundle, outside int
	for line := range strings.Lines(logs.String()) {
		if !strings.Contains(line, "mcp.method=tools/call") {
			continue
		}
		if strings.Contains(line, "mcp.bundle=notes_b") {
			inBundle++
		} else {
			outside++
		}
	}
	if inBundle != 1 || outside != 1 {
		t.Errorf("tools/call access lines: %d naming the bundle, %d without; want 1 and 1:\n%s", inBundle, outside, logs.String())
	}
}
