package server_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/identity"
)

// perUserNotFederated is the gateway's log line for an upstream left out
// of federation for its identity mode.
const perUserNotFederated = "per-user identity mode is not federated"

// TestMCPFederationSkipsPerUserIdentity: two go-sdk upstreams, st_ under
// the static identity and pu_ under passthrough (an upstream_identity rule
// for its origin). The go-sdk client sees st_'s resources, templates and
// prompts and none of pu_'s; reading, getting or completing one of pu_'s
// (or subscribing to one) is the same error as naming an unknown
// upstream's; a caller who sees
// only pu_'s tool is declared no resources, prompts or completions; pu_
// receives none of these requests (they would go with the gateway's own
// credential, not the caller's), and the gateway says why once.
func TestMCPFederationSkipsPerUserIdentity(t *testing.T) {
	st, pu := startPlainUpstream(t, "echo"), startPlainUpstream(t, "echo")
	origin, err := policy.ParseURLOrigin(pu.url)
	if err != nil {
		t.Fatal(err)
	}
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "puonly", SHA256: policy.HashAPIKey("puonly-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"agent":  {Allow: []string{"*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
		"puonly": {Allow: []string{"pu_*"}, Resources: policy.URIAccess{Allow: []string{"*"}}},
	}}
	p.MCPUpstreams.Input.KeyFiles = []string{sessionKeyFile(t)} // face sessions, for subscriptions
	p.UpstreamIdentity = identity.Config{Upstreams: []identity.Rule{{Match: origin, Mode: identity.Passthrough}}}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), gatewaytest.WithLogOutput(logs),
		importedTool("st_echo", st.url, "echo"), importedTool("pu_echo", pu.url, "echo"))
	ctx := longCtx(t)
	connect := func(key string) *mcp.ClientSession {
		return mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer " + key}}, version: "2025-11-25"})
	}
	waitFederated(t, ctx, env.MCPURL)
	agent := connect("agent-key")

	res, err := agent.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range res.Resources {
		listed = append(listed, r.URI)
	}
	tmpls, err := agent.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tmpls.ResourceTemplates {
		listed = append(listed, r.URITemplate)
	}
	prompts, err := agent.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range prompts.Prompts {
		listed = append(listed, r.Name)
	}
	for _, tc := range []struct {
		item, reason string
		want         bool
	}{
		{"flowdrop-mcp://st_/doc://a", "the static upstream's resource is federated", true},
		{"flowdrop-mcp://st_/doc://t/{id}", "the static upstream's template is federated", true},
		{"st_greet", "the static upstream's prompt is federated", true},
		{"flowdrop-mcp://pu_/doc://a", "a per-user upstream's resource would be read as the gateway", false},
		{"flowdrop-mcp://pu_/doc://t/{id}", "a per-user upstream's template would be read as the gateway", false},
		{"pu_greet", "a per-user upstream's prompt would be got as the gateway", false},
	} {
		if got := slices.Contains(listed, tc.item); got != tc.want {
			t.Errorf("%s listed: %v, want %v (%s); listed %v", tc.item, got, tc.want, tc.reason, listed)
		}
	}

	// Naming pu_'s items is naming an unknown upstream's (zz_).
	sameAsUnknown := func(what string, call func(ns string) error) {
		t.Helper()
		errPU, errZZ := call("pu_"), call("zz_")
		var rpcPU, rpcZZ *jsonrpc.Error
		if !errors.As(errPU, &rpcPU) || !errors.As(errZZ, &rpcZZ) {
			t.Errorf("%s: errors %v and %v, want JSON-RPC errors", what, errPU, errZZ)
			return
		}
		if rpcPU.Code != rpcZZ.Code || strings.ReplaceAll(rpcPU.Message, "pu_", "zz_") != rpcZZ.Message {
			t.Errorf("%s of the per-user upstream: %d %q; want what an unknown one gets: %d %q", what, rpcPU.Code, rpcPU.Message, rpcZZ.Code, rpcZZ.Message)
		}
	}
	sameAsUnknown("resources/read", func(ns string) error {
		_, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: "flowdrop-mcp://" + ns + "/doc://a"})
		return err
	})
	sameAsUnknown("prompts/get", func(ns string) error {
		_, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: ns + "greet", Arguments: map[string]string{"name": "Ada"}})
		return err
	})
	sameAsUnknown("completion/complete of a prompt", func(ns string) error {
		_, err := agent.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: ns + "greet"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}})
		return err
	})
	sameAsUnknown("completion/complete of a template", func(ns string) error {
		_, err := agent.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "flowdrop-mcp://" + ns + "/doc://t/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: "7"}})
		return err
	})
	// Subscriptions are served to a caller getting a face session.
	subAgent, _ := sessionClient(t, ctx, env.MCPURL, "agent-key", nil)
	sameAsUnknown("resources/subscribe", func(ns string) error {
		return subAgent.Subscribe(ctx, &mcp.SubscribeParams{URI: "flowdrop-mcp://" + ns + "/doc://a"})
	})
	// The static upstream is still served (the control for the above).
	if _, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: "flowdrop-mcp://st_/doc://a"}); err != nil {
		t.Errorf("reading the static upstream's resource: %v", err)
	}
	if err := subAgent.Subscribe(ctx, &mcp.SubscribeParams{URI: "flowdrop-mcp://st_/doc://a"}); err != nil {
		t.Errorf("subscribing to the static upstream's resource: %v", err)
	}

	puonly := connect("puonly-key")
	if c := puonly.InitializeResult().Capabilities; c.Resources != nil || c.Prompts != nil || c.Completions != nil {
		t.Errorf("a caller seeing only the per-user upstream is declared %+v; want tools alone", c)
	}
	if got := pu.saw(); len(got) != 0 {
		t.Errorf("the per-user upstream received %v; want no federated request", got)
	}
	if n := strings.Count(logs.String(), perUserNotFederated); n != 1 {
		t.Errorf("the gateway said %d times that the per-user upstream is not federated, want once; logs:\n%s", n, logs.String())
	}
}
