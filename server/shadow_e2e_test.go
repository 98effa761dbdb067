package server_test

import (
	"net/http"
	"strings"

	"path/filepath"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestShadowMode: a shadow rule and a shadow authz entry let calls through
// (over gRPC and MCP) while the audit line records what they would have
// refused and flowdrop_policy_shadow_denials_total counts it; an enforced
// rule still refuses; a call no shadow entry objects to has no
// shadow_denials; and a shadow default is refused at load.
func TestShadowMode(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: path}
	p.Rules = append(p.Rules, policy.Rule{Name: "no-drafts", Tools: []string{"create_note"},
		Expr: `!args.title.startsWith("draft")`, Message: "drafts stay local", Mode: policy.ModeShadow})
	// The invoker's new entry is watched: it is enforced by the default
	// (every tool) meanwhile.
	p.Authz.Callers["invoker"] = policy.ToolAccess{Allow: []string{"create_note", "run_command"}, Mode: policy.ModeShadow}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithMCP())

	calls := []struct {
		name, reason string
		tool, callID string
		args         map[string]any
		code         codes.Code
		shadow       []string // the shadow denials' reasons, in order
	}{
		{name: "shadow-rule", reason: "the shadow rule would refuse a draft: the call proceeds, its would-deny recorded",
			tool: "create_note", callID: "shadow-rule", args: map[string]any{"title": "draft plans"}, code: codes.OK,
			shadow: []string{policy.ReasonRuleDenied}},
		{name: "shadow-authz", reason: "the invoker's shadow entry does not allow apply_ops: it proceeds under the default, recorded",
			tool: "apply_ops", callID: "shadow-authz", args: map[string]any{"ops": []any{map[string]any{"op": "remove", "path": "/a"}}}, code: codes.OK,
			shadow: []string{policy.ReasonToolNotAllowed}},
		{name: "enforced-rule-wins", reason: "shadow never weakens an enforced decision: the enforced rule still refuses",
			tool: "run_command", callID: "enforced", args: map[string]any{"command": "ls && rm -rf /"}, code: codes.PermissionDenied},
		{name: "clean", reason: "a call no shadow entry objects to has no shadow denials",
			tool: "create_note", callID: "clean", args: map[string]any{"title": "plans"}, code: codes.OK},
	}
	for _, tc := range calls {
		_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: tc.tool, CallId: tc.callID,
			Arguments: gatewaytest.Args(t, tc.args)})
		if got := status.Code(err); got != tc.code {
			t.Errorf("%s: code %v (%v), want %v (%s)", tc.name, got, err, tc.code, tc.reason)
		}
	}

	// MCP: the same shadow rule, the same result.
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "draft two"},
		Meta: mcp.Meta{"flowdrop/call_id": "shadow-mcp"}})
	if err != nil || res.IsError {
		t.Errorf("MCP call a shadow rule would refuse: %v %+v, want a result", err, res)
	}

	fams := scrape(t, env.AdminURL)
	if got := sample(fams, "flowdrop_policy_shadow_denials_total", map[string]string{"tool": "create_note", "reason": policy.ReasonRuleDenied}); got != 2 {
		t.Errorf("shadow denials of create_note by the rule = %v, want 2 (gRPC and MCP)", got)
	}
	if got := sample(fams, "flowdrop_policy_shadow_denials_total", map[string]string{"tool": "apply_ops", "reason": policy.ReasonToolNotAllowed}); got != 1 {
		t.Errorf("shadow denials of apply_ops by the authz entry = %v, want 1", got)
	}

	bad := testPolicy(nil)
	bad.Authz.Default.Mode = policy.ModeShadow
	if err := env.Gateway.ReloadPolicy(bad); err == nil {
		t.Error("a shadow authz default was accepted: it would open every tool")
	}

	lines, _ := auditLines(t, env, path)
	byID := map[string]map[string]any{}
	for _, l := range lines {
		if id, _ := l["call_id"].(string); id != "" {
			byID[id] = l
		}
	}
	want := map[string]struct {
		decision string
		shadow   []string
		rule     string
	}{
		"shadow-rule":  {policy.DecisionAllow, []string{policy.ReasonRuleDenied}, "no-drafts"},
		"shadow-authz": {policy.DecisionAllow, []string{policy.ReasonToolNotAllowed}, ""},
		"shadow-mcp":   {policy.DecisionAllow, []string{policy.ReasonRuleDenied}, "no-drafts"},
		"enforced":     {policy.DecisionDeny, nil, ""},
		"clean":        {policy.DecisionAllow, nil, ""},
	}
	for id, w := range want {
		l := byID[id]
		if l == nil {
			t.Errorf("no audit line for %s", id)
			continue
		}
		if l["decision"] != w.decision {
			t.Errorf("%s: decision %v, want %s", id, l["decision"], w.decision)
		}
		sd, _ := l["shadow_denials"].([]any)
		if len(sd) != len(w.shadow) {
			t.Errorf("%s: shadow_denials %v, want reasons %v", id, l["shadow_denials"], w.shadow)
			continue
		}
		for i, r := range w.shadow {
			d := sd[i].(map[string]any)
			if d["reason"] != r || d["message"] == "" {
				t.Errorf("%s: shadow_denials[%d] = %v, want reason %s with a message", id, i, d, r)
			}
			if w.rule != "" && d["rule"] != w.rule {
				t.Errorf("%s: shadow_denials[%d].rule = %v, want %s", id, i, d["rule"], w.rule)
			}
		}
	}

}

// TestShadowLimits: rate_limit.mode and limits.mode shadow watch a limit
// instead of enforcing it — calls over it proceed and are counted as
// shadow denials — while the default argument limits, which bound the
// gateway's own memory, stay enforced whatever the mode.
func TestShadowLimits(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	p.RateLimit = policy.RateLimitConfig{Rate: 0.001, Burst: 1, Mode: policy.ModeShadow}
	p.Limits = policy.Limits{MaxStringLength: 8, Mode: policy.ModeShadow}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin())
	for i := range 3 { // burst 1: the 2nd and 3rd are over the rate; each title is over 8 bytes
		if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note",
			Arguments: gatewaytest.Args(t, map[string]any{"title": "a title over eight bytes"})}); err != nil {
			t.Fatalf("call %d under shadow limits: %v; want OK", i, err)
		}
	}
	fams := scrape(t, env.AdminURL)
	if got := sample(fams, "flowdrop_policy_shadow_denials_total", map[string]string{"tool": "create_note", "reason": policy.ReasonRateLimited}); got != 2 {
		t.Errorf("shadow rate-limit denials = %v, want 2", got)
	}
	if got := sample(fams, "flowdrop_policy_shadow_denials_total", map[string]string{"tool": "create_note", "reason": policy.ReasonLimitStringLength}); got != 3 {
		t.Errorf("shadow string-length denials = %v, want 3", got)
	}
	// The defaults stay enforced in shadow mode: a 2 MiB string is refused.
	_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note",
		Arguments: gatewaytest.Args(t, map[string]any{"title": strings.Repeat("x", 2<<20)})})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a string over the default limit under limits.mode shadow: %v; want InvalidArgument", err)
	}
	if _, err := server.ParsePolicy([]byte("auth: {mode: off}\nlimits: {mode: watch}\n"), "inline"); err == nil {
		t.Error("limits.mode watch was accepted")
	}
}
