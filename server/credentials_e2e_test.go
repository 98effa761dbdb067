package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCredentialSourcesAreDeclaredByTheOperator: a registry admin can name
// as a tool's credential only a source the policy file declares, for the
// origin it declares it for (issue 28 item 7: AWS_SECRET_ACCESS_KEY and the
// machine id were sent to an attacker's URL). Anything else is refused at
// registration, InvalidArgument naming the field, before the source is read
// and before the upstream is contacted; a declared source works; and once a
// reload removes it, a call whose tool names it fails closed without
// reaching the upstream.
func TestCredentialSourcesAreDeclaredByTheOperator(t *testing.T) {
	ctx := testCtx(t)
	up := mcpupstreamtest.Start(t)    // the tools' upstream
	other := mcpupstreamtest.Start(t) // somewhere else (an attacker's)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-never-sent")
	t.Setenv("FLOWDROP_E2E_UPSTREAM_TOKEN", "tok-from-env")
	dir := filepath.Join(t.TempDir(), "creds")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "upstream.token")
	if err := os.WriteFile(tokenFile, []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "other.token") // readable, not declared
	if err := os.WriteFile(outside, []byte("tok-outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	upOrigin := strings.TrimSuffix(up.URL, "/mcp")
	p := server.DemoPolicy()
	p.Credentials = []policy.CredentialSource{
		{Env: "FLOWDROP_E2E_UPSTREAM_TOKEN", Origins: []string{upOrigin}},
		{File: filepath.Join(dir, "*"), Origins: []string{upOrigin}},
	}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP())
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	schema, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	tool := func(name, url, credEnv, credFile string) *gatewayv1.Tool {
		return &gatewayv1.Tool{Name: name, InputSchema: schema, Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{
			McpTool: &gatewayv1.McpTool{Url: url, Tool: "refuse", CredentialEnv: credEnv, CredentialFile: credFile}}}}
	}

	refused := []struct {
		name, reason, url, env, file, field, want string
	}{
		{name: "undeclared-env", reason: "any environment variable of the gateway", url: other.URL, env: "AWS_SECRET_ACCESS_KEY",
			field: "spec.mcp_tool.credential_env", want: "environment variable AWS_SECRET_ACCESS_KEY is not a credential source the gateway's policy declares"},
		{name: "machine-id", reason: "any readable file of the gateway's host", url: other.URL, file: "/etc/machine-id",
			field: "spec.mcp_tool.credential_file", want: "file /etc/machine-id is not a credential source"},
		{name: "undeclared-file", reason: "a readable file outside the declared glob", url: up.URL, file: outside,
			field: "spec.mcp_tool.credential_file", want: "is not a credential source"},
		{name: "dot-dot", reason: "a path escaping the declared directory is not matched by its glob", url: up.URL, file: dir + "/../../other.token",
			field: "spec.mcp_tool.credential_file", want: "must be a clean absolute path"},
		{name: "declared-env-elsewhere", reason: "a declared source sent to an origin it is not declared for", url: other.URL, env: "FLOWDROP_E2E_UPSTREAM_TOKEN",
			field: "spec.mcp_tool.credential_env", want: "may not be sent to " + strings.TrimSuffix(other.URL, "/mcp")},
		{name: "declared-file-elsewhere", reason: "likewise for a declared file", url: other.URL, file: tokenFile,
			field: "spec.mcp_tool.credential_file", want: "may not be sent to"},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			_, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool("x."+r.name, r.url, r.env, r.file)})
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(msg, r.field) || !strings.Contains(msg, r.want) {
				t.Fatalf("RegisterTool: %v; want InvalidArgument naming %s: %q (%s)", err, r.field, r.want, r.reason)
			}
			for _, secret := range []string{"aws-secret", "tok-"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the refusal %q quotes a credential", msg)
				}
			}
		})
	}
	if got := append(up.Credentials(), other.Credentials()...); len(got) != 0 {
		t.Errorf("the upstreams got %d requests from refused registrations; want none", len(got))
	}

	// Declared sources, for their origin: registered, and sent there.
	for _, d := range []struct{ name, env, file, want string }{
		{"ok.env", "FLOWDROP_E2E_UPSTREAM_TOKEN", "", "Bearer tok-from-env"},
		{"ok.file", "", tokenFile, "Bearer tok-from-file"},
	} {
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool(d.name, up.URL, d.env, d.file)}); err != nil {
			t.Fatalf("register %s: %v", d.name, err)
		}
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: d.name, Arguments: gatewaytest.Args(t, map[string]any{})})
		if err != nil || !resp.GetIsError() {
			t.Fatalf("invoke %s: %v, %v; want the upstream's tool error (the call reached it)", d.name, resp, err)
		}
		if !slices.Contains(up.Credentials(), d.want) {
			t.Errorf("the upstream got credentials %q; want %q among them", up.Credentials(), d.want)
		}
	}

	// A reload removes the file source: its tool fails closed.
	p.Credentials = p.Credentials[:1]
	if err := env.Gateway.ReloadPolicy(p); err != nil {
		t.Fatal(err)
	}
	calls := len(up.Args())
	_, err = env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "ok.file", Arguments: gatewaytest.Args(t, map[string]any{})})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "not one the gateway's policy declares") {
		t.Errorf("invoke ok.file after its source was removed: %v; want FailedPrecondition saying the credential is not declared", err)
	}
	if msg := status.Convert(err).Message(); strings.Contains(msg, tokenFile) || strings.Contains(msg, upOrigin) {
		t.Errorf("the refusal %q names the credential file or the upstream", msg)
	}
	// MCP: a tool execution error with the reason (credential-undeclared's
	// row), as gRPC's FailedPrecondition — not a JSON-RPC internal error.
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok.file", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "not one the gateway's policy declares") ||
		res.Meta[mcpapi.MCPMetaReason] != string(pipeline.ReasonCredentialUndeclared) {
		t.Errorf("MCP call of ok.file after its source was removed: %+v, %v; want isError saying the credential is not declared, reason %s",
			res, err, pipeline.ReasonCredentialUndeclared)
	} else if msg := resultText(res); strings.Contains(msg, tokenFile) || strings.Contains(msg, upOrigin) {
		t.Errorf("the MCP refusal %q names the credential file or the upstream", msg)
	}
	if got := len(up.Args()); got != calls {
		t.Errorf("the upstream got %d calls after the source was removed; want none", got-calls)
	}
	if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "ok.env", Arguments: gatewaytest.Args(t, map[string]any{})}); err != nil {
		t.Errorf("invoke ok.env, whose source is still declared: %v", err)
	}
}
