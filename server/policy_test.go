package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

const (
	unitInvokerKey = "fd_unit_invoker_3e9a51"
	unitAdminKey   = "fd_unit_admin_0b7c44"
)

func unitPolicy() PolicyConfig {
	p := DemoPolicy()
	p.Admin.ListenAddr = ""
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "invoker", SHA256: policy.HashAPIKey(unitInvokerKey), Roles: []string{policy.RoleInvoker}},
		{Name: "admin", SHA256: policy.HashAPIKey(unitAdminKey), Roles: []string{policy.RoleAdmin}},
	}}
	p.Authz.Callers = map[string]policy.ToolAccess{"limited": {Allow: []string{"*"}, Deny: []string{"run_*"}}}
	p.Rules = []policy.Rule{{Name: "no-shell-chaining", Tools: []string{"run_command"}, Expr: `!args.command.contains("&&")`}}
	p.Limits = policy.Limits{MaxDepth: 4}
	return p
}

// TestAuthenticateHTTP: the MCP endpoint's authentication reads the same
// credentials as gRPC, from HTTP headers.
func TestAuthenticateHTTP(t *testing.T) {
	var p pipeline
	cfg := unitPolicy()
	if err := p.policyState.init(t.Context(), &cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	defer p.policyState.close()
	cases := []struct {
		name, reason string
		headers      map[string]string
		subject      string // "" when refused
		refusal      string
	}{
		{name: "api-key-header", reason: "X-API-Key identifies the caller", headers: map[string]string{"X-API-Key": unitInvokerKey}, subject: "invoker"},
		{name: "bearer-api-key", reason: "without JWT configured a bearer token is an API key", headers: map[string]string{"Authorization": "Bearer " + unitAdminKey}, subject: "admin"},
		{name: "none", reason: "no credentials", refusal: policy.ReasonCredentialsMissing},
		{name: "basic", reason: "another scheme is refused, not ignored", headers: map[string]string{"Authorization": "Basic " + unitInvokerKey}, refusal: policy.ReasonCredentialsMalformed},
		{name: "unknown", reason: "an unknown key", headers: map[string]string{"X-API-Key": "fd_nope"}, refusal: policy.ReasonAPIKeyUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			c, err := p.authenticateHTTP(r)
			if tc.refusal != "" {
				pe, ok := policy.AsError(err)
				if !ok || pe.Reason != tc.refusal || pe.Code != policy.Unauthenticated {
					t.Fatalf("err = %v, want %s (%s)", err, tc.refusal, tc.reason)
				}
				if strings.Contains(pe.Message, unitInvokerKey) {
					t.Errorf("message echoes the key")
				}
				return
			}
			if err != nil || c.Subject != tc.subject {
				t.Fatalf("caller %+v, err %v, want %s (%s)", c, err, tc.subject, tc.reason)
			}
		})
	}
}

// TestInvokeAppliesThePolicy: the transport-free entry point (MCP) runs the
// same checks as the gRPC chain, in the same order, and audits each call.
func TestInvokeAppliesThePolicy(t *testing.T) {
	reg := testPipeline(t).reg.(*registry.Registry) // demo tools on an unreachable backend
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.DefaultTimeout = time.Second
	cfg.Policy = unitPolicy()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg.Policy.Audit.Path = audit
	s, err := New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	invoker := policy.Caller{Subject: "invoker", Method: policy.MethodAPIKey, Roles: []string{policy.RoleInvoker}}
	cases := []struct {
		name, reason string
		ctx          context.Context
		tool         string
		args         map[string]any
		refusal      string // "" : passes every policy check (then the backend is unreachable)
	}{
		{name: "unauthenticated", reason: "no caller in ctx is refused", ctx: context.Background(),
			tool: "create_note", args: map[string]any{"title": "x"}, refusal: policy.ReasonCredentialsMissing},
		{name: "admin-only", reason: "role check for InvokeTool", ctx: policy.WithCaller(context.Background(), policy.Caller{Subject: "admin", Method: policy.MethodAPIKey, Roles: []string{policy.RoleAdmin}}),
			tool: "create_note", args: map[string]any{"title": "x"}, refusal: policy.ReasonRoleMissing},
		{name: "tool-denied", reason: "per-caller deny list", ctx: policy.WithCaller(context.Background(), policy.Caller{Subject: "limited", Method: policy.MethodAPIKey, Roles: []string{policy.RoleInvoker}}),
			tool: "run_command", args: map[string]any{"command": "ls"}, refusal: policy.ReasonToolDenied},
		{name: "bypass", reason: "the rule sees the normalized command", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "run_command", args: map[string]any{"command": "ls &amp;&amp; rm -rf /"}, refusal: policy.ReasonRuleDenied},
		{name: "depth-after-decoding", reason: "limits run on the normalized arguments too", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "update_settings", args: map[string]any{"settings": `{"a":{"b":{"c":{"d":1}}}}`}, refusal: policy.ReasonLimitDepth},
		{name: "allowed", reason: "a harmless call passes every check and reaches forward", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "run_command", args: map[string]any{"command": "ls &amp; pwd"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.pipe.invoke(tc.ctx, &call{tool: tc.tool, args: mustStruct(t, tc.args)})
			if tc.refusal == "" {
				var be *backendError
				if !errors.As(err, &be) {
					t.Fatalf("err = %v, want the backend error (%s)", err, tc.reason)
				}
				return
			}
			if pe, ok := policy.AsError(err); !ok || pe.Reason != tc.refusal {
				t.Fatalf("err = %v, want %s (%s)", err, tc.refusal, tc.reason)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != len(cases) {
		t.Errorf("%d audit lines for %d calls:\n%s", n, len(cases), b)
	}
}
