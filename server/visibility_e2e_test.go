package server_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// TestVisibilityIsOneRuleOnBothFaces: a caller sees a tool exactly when it
// could invoke it — on gRPC (ListTools, GetTool, WatchTools) and on MCP
// (tools/list) alike — whatever other roles it holds.
func TestVisibilityIsOneRuleOnBothFaces(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "invoker", SHA256: policy.HashAPIKey("vis-invoker"), Roles: []string{policy.RoleInvoker}},
			{Name: "admin", SHA256: policy.HashAPIKey("vis-admin"), Roles: []string{policy.RoleAdmin}},
			{Name: "both", SHA256: policy.HashAPIKey("vis-both"), Roles: []string{policy.RoleAdmin, policy.RoleInvoker}},
			{Name: "limited", SHA256: policy.HashAPIKey("vis-limited"), Roles: []string{policy.RoleInvoker}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}},
			Callers: map[string]policy.ToolAccess{"limited": {Allow: []string{"create_*"}}}}
	}))
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	all := []string{}
	for _, e := range env.Registry.Snapshot().List() {
		all = append(all, e.Tool.Name)
	}
	cases := []struct {
		name, reason, key string
		want              []string
	}{
		{name: "invoker-only", reason: "an invoker sees every tool it may call", key: "vis-invoker", want: all},
		{name: "admin-only", reason: "admin does not imply invoker: it may call no tool, so it sees none", key: "vis-admin", want: []string{}},
		{name: "both-roles", reason: "with both roles the invoker role decides", key: "vis-both", want: all},
		{name: "allow-list", reason: "an allow list narrows what is seen as it narrows what is called", key: "vis-limited", want: []string{"create_note"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := metadata.AppendToOutgoingContext(testCtx(t), "x-api-key", tc.key)

			resp, err := reg.ListTools(ctx, &gatewayv1.ListToolsRequest{})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			listed := []string{}
			for _, tl := range resp.GetTools() {
				listed = append(listed, tl.GetName())
			}
			if !slices.Equal(listed, tc.want) {
				t.Errorf("gRPC ListTools = %v, want %v (%s)", listed, tc.want, tc.reason)
			}

			for _, name := range all {
				_, err := reg.GetTool(ctx, &gatewayv1.GetToolRequest{Name: name})
				visible := slices.Contains(tc.want, name)
				if visible && err != nil || !visible && status.Code(err) != codes.NotFound {
					t.Errorf("GetTool(%s) = %v, visible %v (%s)", name, err, visible, tc.reason)
				}
			}

			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			stream, err := reg.WatchTools(wctx, &gatewayv1.WatchToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			watched := []string{}
			for range tc.want {
				ev, err := stream.Recv()
				if err != nil {
					t.Fatalf("WatchTools replay: %v (%s)", err, tc.reason)
				}
				watched = append(watched, ev.GetTool().GetName())
			}
			slices.Sort(watched)
			if !slices.Equal(watched, tc.want) {
				t.Errorf("WatchTools replay = %v, want %v (%s)", watched, tc.want, tc.reason)
			}

			cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {tc.key}}})
			names := toolNames(t, ctx, cs)
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("MCP tools/list = %v, want %v (%s): the faces disagree", names, tc.want, tc.reason)
			}
		})
	}
}
