package server_test

import (
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/policy"
)

// TestGRPCMethodTargetHiddenFromInvokers: a gRPC-method tool's target is
// shown, like a ToolBackendService address, only to callers that may
// register tools — GetTool, ListTools and WatchTools clear it for an
// invoker, and show it to an operator holding both roles; the method name
// (not an address) stays visible.
func TestGRPCMethodTargetHiddenFromInvokers(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	notes := notestest.Start(t, true)
	p := testPolicy(nil)
	const keyOperator = "operator-key-0123456789"
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "operator", SHA256: policy.HashAPIKey(keyOperator),
		Roles: []string{policy.RoleAdmin, policy.RoleInvoker}})
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	src, err := reflectionSource(t, ctx, notes.Addr)
	if err != nil {
		t.Fatal(err)
	}
	importNotesAs(t, env, src, notes.Addr, keyAdmin)

	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	const tool = "hidden.NotesService.CreateNote"
	for _, tc := range []struct {
		key, reason string
		wantTarget  string
	}{
		{keyInvoker, "an invoker reads no target", ""},
		{keyOperator, "an operator (admin and invoker) reads it", notes.Addr},
	} {
		get, err := rc.GetTool(withKey(tc.key), &gatewayv1.GetToolRequest{Name: tool})
		if err != nil {
			t.Fatalf("GetTool: %v", err)
		}
		list, err := rc.ListTools(withKey(tc.key), &gatewayv1.ListToolsRequest{NamePrefix: tool})
		if err != nil || len(list.GetTools()) != 1 {
			t.Fatalf("ListTools: %v %v", list, err)
		}
		ws, err := rc.WatchTools(withKey(tc.key), &gatewayv1.WatchToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var watched *gatewayv1.Tool
		for watched == nil {
			ev, err := ws.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetTool().GetName() == tool {
				watched = ev.GetTool()
			}
		}
		for what, got := range map[string]*gatewayv1.Tool{"GetTool": get.GetTool(), "ListTools": list.GetTools()[0], "WatchTools": watched} {
			m := got.GetSpec().GetGrpcMethod()
			if m.GetTarget() != tc.wantTarget || m.GetMethod() != "/flowdrop.testing.v1.NotesService/CreateNote" {
				t.Errorf("%s as %s: target %q method %q; want target %q and the method (%s)", what, tc.key, m.GetTarget(), m.GetMethod(), tc.wantTarget, tc.reason)
			}
		}
	}
}

// importNotesAs registers the service's tools under "hidden." with key.
func importNotesAs(t *testing.T, env *gatewaytest.Env, src *grpcimport.Source, target, key string) {
	t.Helper()
	tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: target, Prefix: "hidden."})
	if err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tool := range tools {
		if _, err := rc.RegisterTool(withKey(key), &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}
}
