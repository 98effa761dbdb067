package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestProdPolicyKeepsCleanArgumentsUndecoded: under a production policy
// (API key, fail-closed audit with arguments, CEL rules) a clean call's
// arguments are never decoded whole — the rules that read named members
// get just those, the audit line is encoded from the received bytes — and
// the answers are what decoding would give: each rule judged (a refusal
// by a picked member, a rule over the whole arguments still decoding
// them), the audit line carrying the arguments as sent with the
// sensitive values redacted. With the fast paths off every call decodes
// and the lines and answers are the same.
func TestProdPolicyKeepsCleanArgumentsUndecoded(t *testing.T) {
	okHandler := func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return &gatewayv1.InvokeResponse{}, nil
	}
	t.Parallel()
	p, err := server.LoadPolicyFile(filepath.Join("..", "tools", "bench", "prod-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit.Path = audit
	p.Rules = []policy.Rule{
		{Name: "no-drop", Tools: []string{"signup"}, Expr: `!has(args.title) || !args.title.contains("DROP TABLE")`},
		{Name: "count-bound", Tools: []string{"signup"}, Expr: `!has(args.count) || args.count < 100`},
		{Name: "whole", Tools: []string{"signup_whole"}, Expr: `size(args) < 8`},
	}
	whole := func(backend string) (t2 registry.Tool) { t2 = sensitiveTool(backend); t2.Name = "signup_whole"; return }
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithTool(sensitiveTool), gatewaytest.WithTool(whole),
		gatewaytest.WithBackendHandler("signup", okHandler), gatewaytest.WithBackendHandler("signup_whole", okHandler))
	decodes := int64(0)
	if gatewaytest.FastPathsOff() {
		decodes = 1
	}
	sent := map[string]any{
		"title": "Ember & <Oak>", "password": "hunter2", "token": "t0k",
		"profile": map[string]any{"name": "n", "secret": "s3"}, "keys": []any{"k1", "k2"}, "count": 3,
	}
	repairable := map[string]any{
		"title": "Ember &amp; &lt;Oak&gt;", "password": "hunter2", "token": "t0k",
		"profile": `{"name":"n","secret":"s3"}`, "keys": []any{"k1", "k2"}, "count": 3,
	}
	cases := []struct {
		name, reason, tool string
		args               map[string]any
		wantCode           codes.Code
		wantDecodes        int64
	}{
		{"allowed", "rules reading title and count get just those; the audit encodes from the bytes", "signup", sent, codes.OK, decodes},
		{"refused by a picked member", "the rule judges the member it reads, decoded from the bytes", "signup", map[string]any{"title": "x; DROP TABLE users", "count": 3}, codes.PermissionDenied, decodes},
		{"refused by the second rule", "every rule's members are picked, not only the first rule's", "signup", map[string]any{"title": "ok", "count": 500}, codes.PermissionDenied, decodes},
		{"repaired on the wire", "only the repaired members are decoded; the rest of the call reads bytes", "signup", repairable, codes.OK, decodes},
		{"refused after a wire repair", "the rule judges the repaired member, not the escaped one", "signup",
			map[string]any{"title": "x; DROP&#32;TABLE users", "count": 3}, codes.PermissionDenied, decodes},
		{"rule over the whole arguments", "size(args) needs every member: decoded whole", "signup_whole", sent, codes.OK, 1},
		{"rule over the whole arguments refuses", "and judges them all", "signup_whole", map[string]any{"title": "a", "count": 1, "token": "a", "password": "b", "keys": []any{}, "profile": map[string]any{}, "extra": 1, "more": 2}, codes.PermissionDenied, 1},
	}
	for _, tc := range cases {
		var err error
		_, decoded, _ := pathDelta(env.Gateway, func() {
			_, err = env.Client.InvokeTool(withKey(benchAPIKey), &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: gatewaytest.Args(t, tc.args), CallId: tc.name})
		})
		if status.Code(err) != tc.wantCode {
			t.Errorf("%s (%s): %v; want %v", tc.name, tc.reason, err, tc.wantCode)
		}
		if decoded != tc.wantDecodes {
			t.Errorf("%s (%s): arguments decoded %d times; want %d", tc.name, tc.reason, decoded, tc.wantDecodes)
		}
	}
	lines, _ := auditLines(t, env, audit)
	byID := map[string]map[string]any{}
	for _, l := range lines {
		if id, _ := l["call_id"].(string); id != "" {
			byID[id] = l
		}
	}
	wantSent := `{"count":3,"keys":["[REDACTED]","[REDACTED]"],"password":"[REDACTED]","profile":{"name":"n","secret":"[REDACTED]"},"title":"Ember & <Oak>","token":"[REDACTED]"}`
	for _, id := range []string{"allowed", "rule over the whole arguments"} {
		l := byID[id]
		if l == nil {
			t.Fatalf("no audit line for %q", id)
		}
		got, _ := json.Marshal(l["args_sent"])
		var norm any
		_ = json.Unmarshal([]byte(wantSent), &norm)
		want, _ := json.Marshal(norm)
		if string(got) != string(want) {
			t.Errorf("%s: args_sent %s; want %s (as sent, redacted)", id, got, want)
		}
		if l["args_repaired"] != nil {
			t.Errorf("%s: args_repaired %v; want none (nothing repaired)", id, l["args_repaired"])
		}
	}
	// A repair made on the wire: the line has the arguments as sent and as
	// forwarded, each redacted by the schema (the profile, a string as
	// sent, is redacted whole; as an object only its secret).
	if l := byID["repaired on the wire"]; l == nil {
		t.Error("no audit line for the call repaired on the wire")
	} else {
		for field, want := range map[string]string{
			"args_sent":     `{"count":3,"keys":["[REDACTED]","[REDACTED]"],"password":"[REDACTED]","profile":"[REDACTED]","title":"Ember &amp; &lt;Oak&gt;","token":"[REDACTED]"}`,
			"args_repaired": wantSent,
		} {
			got, _ := json.Marshal(l[field])
			var norm any
			_ = json.Unmarshal([]byte(want), &norm)
			w, _ := json.Marshal(norm)
			if string(got) != string(w) {
				t.Errorf("repaired on the wire: %s %s; want %s", field, got, w)
			}
		}
	}
	for _, id := range []string{"refused by a picked member", "refused by the second rule", "refused after a wire repair"} {
		if l := byID[id]; l == nil || l["decision"] != policy.DecisionDeny || l["args_sent"] == nil {
			t.Errorf("%s: audit line %v; want a deny with the arguments", id, l)
		}
	}
}
