package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

func auditedTool(t *testing.T, name, backend string) *gatewayv1.Tool {
	t.Helper()
	schema, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	return &gatewayv1.Tool{Name: name, InputSchema: schema, Backend: backend}
}

// TestRegistryWritesAreAudited: every RegisterTool and DeleteTool leaves an
// audit line — who, which tool, applied or refused and why, the revision a
// registration made — including a caller without the admin role trying
// and a write refused for its credential; reads leave none.
func TestRegistryWritesAreAudited(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	p := internalsPolicy() // ops: admin and invoker, so it also reads what it wrote
	p.Audit = server.AuditConfig{Path: path}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	as := func(key string) context.Context { return withKeyCtx(ctx, key) }
	const forgedKey = "fd-forged-key-never-issued"
	var revisions []int64 // the registrations' answers

	steps := []struct {
		name, reason string
		do           func() error
		want         codes.Code
		line         map[string]any // nil: no line
	}{
		{"register", "an admin's registration: applied, with the revision it made", func() error {
			resp, err := rc.RegisterTool(as(keyOps), &gatewayv1.RegisterToolRequest{Tool: auditedTool(t, "audited_tool", env.BackendAddr)})
			revisions = append(revisions, resp.GetTool().GetRevision())
			return err
		}, codes.OK, map[string]any{"operation": "RegisterTool", "tool": "audited_tool", "decision": "allow",
			"caller_subject": "ops", "caller_method": "api-key"}},
		{"re-register", "a new revision", func() error {
			tl := auditedTool(t, "audited_tool", env.BackendAddr)
			tl.Description = "v2"
			resp, err := rc.RegisterTool(as(keyOps), &gatewayv1.RegisterToolRequest{Tool: tl})
			revisions = append(revisions, resp.GetTool().GetRevision())
			return err
		}, codes.OK, map[string]any{"operation": "RegisterTool", "tool": "audited_tool", "decision": "allow"}},
		{"invoker-register", "a caller without the admin role is refused, and that is on record", func() error {
			_, err := rc.RegisterTool(as(keyInvoker), &gatewayv1.RegisterToolRequest{Tool: auditedTool(t, "sneaky_tool", env.BackendAddr)})
			return err
		}, codes.PermissionDenied, map[string]any{"operation": "RegisterTool", "tool": "sneaky_tool", "decision": "deny",
			"caller_subject": "invoker", "reason": policy.ReasonRoleMissing}},
		{"unauthenticated-register", "a write refused for its credential is on record too, without a caller, and without the tool: it is refused on its headers, before its request is read", func() error {
			_, err := rc.RegisterTool(as(forgedKey), &gatewayv1.RegisterToolRequest{Tool: auditedTool(t, "forged_tool", env.BackendAddr)})
			return err
		}, codes.Unauthenticated, map[string]any{"operation": "RegisterTool", "tool": "", "decision": "deny",
			"reason": policy.ReasonAPIKeyUnknown, "caller_subject": ""}},
		{"read", "reads are not audited", func() error {
			_, err := rc.GetTool(as(keyOps), &gatewayv1.GetToolRequest{Name: "audited_tool"})
			return err
		}, codes.OK, nil},
		{"stale-delete", "a write refused by the registry: error, with its reason", func() error {
			_, err := rc.DeleteTool(as(keyOps), &gatewayv1.DeleteToolRequest{Name: "audited_tool", ExpectedRevision: new(revisions[0])})
			return err
		}, codes.Aborted, map[string]any{"operation": "DeleteTool", "tool": "audited_tool", "decision": "error", "reason": "revision-mismatch"}},
		{"delete", "an admin's deletion", func() error {
			_, err := rc.DeleteTool(as(keyOps), &gatewayv1.DeleteToolRequest{Name: "audited_tool"})
			return err
		}, codes.OK, map[string]any{"operation": "DeleteTool", "tool": "audited_tool", "decision": "allow", "caller_subject": "ops"}},
		{"put-bundle", "a bundle's write is a registry write: its line names the bundle where a tool's names the tool", func() error {
			_, err := rc.PutBundle(as(keyOps), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "audited_bundle", Globs: []string{"*"}}})
			return err
		}, codes.OK, map[string]any{"operation": "PutBundle", "tool": "audited_bundle", "decision": "allow", "caller_subject": "ops"}},
		{"invoker-put-bundle", "a bundle write without the admin role is refused and on record", func() error {
			_, err := rc.PutBundle(as(keyInvoker), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "sneaky_bundle", Globs: []string{"*"}}})
			return err
		}, codes.PermissionDenied, map[string]any{"operation": "PutBundle", "tool": "sneaky_bundle", "decision": "deny", "caller_subject": "invoker"}},
		{"delete-bundle", "a bundle's deletion", func() error {
			_, err := rc.DeleteBundle(as(keyOps), &gatewayv1.DeleteBundleRequest{Name: "audited_bundle"})
			return err
		}, codes.OK, map[string]any{"operation": "DeleteBundle", "tool": "audited_bundle", "decision": "allow"}},
	}
	var want []map[string]any
	for _, st := range steps {
		if err := st.do(); status.Code(err) != st.want {
			t.Fatalf("%s: %v; want %v (%s)", st.name, err, st.want, st.reason)
		}
		if st.line != nil {
			want = append(want, st.line)
		}
	}
	if len(revisions) != 2 || revisions[0] == 0 || revisions[1] <= revisions[0] {
		t.Fatalf("revisions %v; want two, increasing", revisions)
	}
	want[0]["revision"], want[1]["revision"] = float64(revisions[0]), float64(revisions[1])
	lines, raw := auditLines(t, env, path)
	var writes []map[string]any
	for _, l := range lines {
		if l["operation"] != nil {
			writes = append(writes, l)
		}
	}
	matchLines(t, "registry-write", writes, want, raw)
	if strings.Contains(raw, keyOps) || strings.Contains(raw, keyInvoker) || strings.Contains(raw, forgedKey) {
		t.Error("the audit file holds a credential")
	}
}

// matchLines checks got holds as many audit lines as want, each with
// want's fields (a field absent from the line reads as nil); raw is the
// file, for the failure.
func matchLines(t *testing.T, what string, got, want []map[string]any, raw string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d %s lines, want %d:\n%s", len(got), what, len(want), raw)
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("%s line %d: %s = %v, want %v\n%v", what, i, k, got[i][k], v, got[i])
			}
		}
	}
}
