package server_test

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestMCPUpstreamTLS: an upstream MCP tool with spec.tls reaches an https
// upstream whose certificate chains to the tool's CA file; without the
// setting the same upstream is refused (the host's roots do not know it);
// a tool requiring TLS with an http URL is refused before any request.
func TestMCPUpstreamTLS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	secure, plain := mcpupstreamtest.StartTLS(t), mcpupstreamtest.Start(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpTool := func(name, url string, ts *registry.TransportSecurity) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: name, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "refuse"}, TLS: ts}}
		})
	}
	env := gatewaytest.Start(t,
		mcpTool("mtls.trusted", secure.URL, &registry.TransportSecurity{CAFile: caFile}),
		mcpTool("mtls.untrusted", secure.URL, nil),
		mcpTool("mtls.required", plain.URL, &registry.TransportSecurity{Require: true}))

	// "refuse" answers isError: reaching it at all proves the TLS session.
	resp, err := invoke(ctx, env, "mtls.trusted")
	if err != nil || !resp.GetIsError() {
		t.Errorf("https upstream with the tool's CA: %v %v; want the upstream's tool error", resp, err)
	}
	_, err = invoke(ctx, env, "mtls.untrusted")
	wantUnavailableNaming(t, err, "mtls.untrusted", "an unknown certificate authority is refused", secure.URL, caFile)
	_, err = invoke(ctx, env, "mtls.required")
	wantUnavailableNaming(t, err, "mtls.required", "TLS required with an http URL: no plaintext", plain.URL)
	if n := len(plain.Credentials()); n != 0 {
		t.Errorf("the plaintext upstream got %d requests; want none (TLS required)", n)
	}
}
