package pipeline_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// jwtCaller is a JWT caller whose verified token carries claims (the
// signature is not looked at after authentication, so none is made).
func jwtCaller(claims string) policy.Caller {
	raw := "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".sig"
	return policy.Caller{Subject: "user-7", Method: policy.MethodJWT, Roles: []string{policy.RoleInvoker},
		Token: policy.NewBearer(raw, nil, time.Time{})}
}

// TestAliasStage: a call to an alias reaches its target's backend with the
// model's arguments and those the alias sets (fixed, from the caller's
// subject, from a JWT claim), validated against the target; a caller
// without the claim, a model sending what the alias sets, arguments the
// target refuses and a target since deleted are refused before the
// backend. A call by a tool's provider-safe export name reaches the tool.
func TestAliasStage(t *testing.T) {
	t.Parallel()
	reg := demoRegistry(t)
	ctx := t.Context()
	// The target takes any extra property, so the alias stage (not the
	// alias's schema) is what stops a model setting tenant.
	target := registry.Tool{Name: "acct.Search", Description: "Search an account.", Backend: "127.0.0.1:1",
		InputSchema: args(t, map[string]any{"type": "object", "required": []any{"q", "tenant"},
			"properties": map[string]any{"q": map[string]any{"type": "string"}, "tenant": map[string]any{"type": "string", "pattern": "^[a-z]+$"},
				"owner": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}}})}
	alias := registry.Tool{Name: "search_mine", Description: "Search your account.",
		InputSchema: args(t, map[string]any{"type": "object", "required": []any{"q"},
			"properties": map[string]any{"q": map[string]any{"type": "string", "maxLength": 40}}}),
		Spec: &registry.BackendSpec{Alias: &registry.Alias{Target: "acct.Search", Fixed: map[string]any{"limit": 10.0},
			Injected: map[string]string{"tenant": "claim:tenant", "owner": "subject"}}}}
	for _, tl := range []registry.Tool{target, alias} {
		if _, err := reg.Register(ctx, tl, registry.RegisterOptions{}); err != nil {
			t.Fatalf("register %s: %v", tl.Name, err)
		}
	}
	be, rec := &echoBackend{}, &recorder{}
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend, cfg.Recorders = reg, be, []pipeline.Recorder{rec}
	p := pipeline.New(cfg)

	withTenant := policy.WithCaller(context.Background(), jwtCaller(`{"sub":"user-7","tenant":"acme"}`))
	cases := []struct {
		name, reason string
		ctx          context.Context
		tool         string
		args         map[string]any
		refusal      pipeline.Reason // "": reaches the backend with want
		want         map[string]any
	}{
		{name: "injected", reason: "the claim and the subject are injected, the fixed limit set",
			ctx: withTenant, tool: "search_mine", args: map[string]any{"q": "invoices"},
			want: map[string]any{"q": "invoices", "tenant": "acme", "owner": "user-7", "limit": 10.0}},
		{name: "no-claim", reason: "an API-key caller has no tenant claim: refused, never sent without it",
			ctx: policy.WithCaller(context.Background(), invoker), tool: "search_mine", args: map[string]any{"q": "x"},
			refusal: pipeline.ReasonAliasIdentity},
		{name: "override", reason: "the model sends tenant, which the alias sets",
			ctx: withTenant, tool: "search_mine", args: map[string]any{"q": "x", "tenant": "other"},
			refusal: pipeline.ReasonAliasArgumentSet},
		{name: "claim-fails-target", reason: "the injected claim fails the target's pattern: refused without echoing it",
			ctx: policy.WithCaller(context.Background(), jwtCaller(`{"sub":"u","tenant":"ACME 1"}`)), tool: "search_mine", args: map[string]any{"q": "x"},
			refusal: pipeline.ReasonAliasArgumentsInvalid},
		{name: "alias-schema", reason: "the alias's own (narrower) schema is applied to the model's arguments",
			ctx: withTenant, tool: "search_mine", args: map[string]any{"q": string(make([]byte, 41))}, refusal: pipeline.ReasonArgumentsInvalid},
		{name: "export-name", reason: "a tool's provider-safe export name reaches it",
			ctx: policy.WithCaller(context.Background(), invoker), tool: "acct_Search", args: map[string]any{"q": "x", "tenant": "t"},
			want: map[string]any{"q": "x", "tenant": "t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(be.calls)
			c := pipeline.NewCall(tc.tool, "", args(t, tc.args))
			_, err := p.Invoke(tc.ctx, c)
			if tc.refusal != "" {
				if err == nil || err.Reason != tc.refusal {
					t.Fatalf("err = %+v, want %s (%s)", err, tc.refusal, tc.reason)
				}
				if len(be.calls) != before {
					t.Errorf("a refused call reached the backend (%s)", tc.reason)
				}
				if tc.refusal == pipeline.ReasonAliasArgumentsInvalid && contains(err.Message, "ACME") {
					t.Errorf("the refusal echoes the injected value: %s", err.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (%s)", err, tc.reason)
			}
			if got := be.calls[len(be.calls)-1].AsMap(); !equalJSON(got, tc.want) {
				t.Errorf("backend got %v, want %v (%s)", got, tc.want, tc.reason)
			}
			if c.BackendTool() != "acct.Search" {
				t.Errorf("backend tool %q, want the target acct.Search", c.BackendTool())
			}
		})
	}
	if rec.backend[0] != "acct.Search:OK" {
		t.Errorf("backend latency recorded under %v, want the target's name", rec.backend)
	}

	// The target deleted: the alias fails closed, naming neither.
	if err := reg.Delete(ctx, "acct.Search", nil); err != nil {
		t.Fatal(err)
	}
	_, err := p.Invoke(withTenant, pipeline.NewCall("search_mine", "", args(t, map[string]any{"q": "x"})))
	if err == nil || err.Reason != pipeline.ReasonAliasTargetMissing || contains(err.Message, "acct.Search") {
		t.Errorf("target deleted: %+v, want %s not naming the target", err, pipeline.ReasonAliasTargetMissing)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func equalJSON(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
