package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/registry"
)

// TestBundleFederationIsTheBundlesUpstreams: through a bundle's endpoint
// the federated resources, templates and prompts are those of the
// upstreams with a tool in the bundle (the caller's view narrowed to it):
// server-everything fronted twice (ev_ over streamable HTTP, st_ over
// stdio), a bundle holding only ev_echo lists and reads ev_'s and refuses
// st_'s as it refuses a namespace no upstream has; /mcp still serves both.
func TestBundleFederationIsTheBundlesUpstreams(t *testing.T) {
	f := startFederation(t)
	if _, err := f.env.Registry.PutBundle(context.Background(), registry.Bundle{Name: "ev", Tools: []string{"ev_echo"}}, nil); err != nil {
		t.Fatal(err)
	}
	cs := mustConnect(t, f.ctx, f.env.MCPURL+"/ev", mcpClientOpts{header: http.Header{"Authorization": {"Bearer agent-key"}}})

	res, err := cs.ListResources(f.ctx, nil)
	if err != nil {
		t.Fatalf("resources/list through the bundle: %v", err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, evDoc) || slices.ContainsFunc(uris, func(u string) bool { return strings.HasPrefix(u, "flowdrop-mcp://st_/") }) {
		t.Errorf("resources/list through /mcp/ev = %v; want ev_'s and none of st_'s", uris)
	}
	tmpls, err := cs.ListResourceTemplates(f.ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list through the bundle: %v", err)
	}
	for _, tm := range tmpls.ResourceTemplates {
		if strings.HasPrefix(tm.URITemplate, "flowdrop-mcp://st_/") {
			t.Errorf("template %s of an upstream outside the bundle is listed", tm.URITemplate)
		}
	}
	prompts, err := cs.ListPrompts(f.ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list through the bundle: %v", err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "ev_args-prompt") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "st_") }) {
		t.Errorf("prompts/list through /mcp/ev = %v; want ev_'s and none of st_'s", names)
	}
	if _, err := cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: evDoc}); err != nil {
		t.Errorf("reading the bundle's upstream's resource: %v", err)
	}
	_, errOutside := cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: stDoc})
	_, errNone := cs.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: "flowdrop-mcp://zz_/demo://resource/static/document/architecture.md"})
	var outside, none *jsonrpc.Error
	if !errors.As(errOutside, &outside) || !errors.As(errNone, &none) || outside.Code != none.Code {
		t.Errorf("reading st_'s resource through /mcp/ev: %v; a namespace no upstream has: %v; want the same refusal", errOutside, errNone)
	}
	if _, err := cs.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "st_args-prompt", Arguments: map[string]string{"city": "x"}}); err == nil {
		t.Error("a prompt of an upstream outside the bundle was served through it")
	}
	// The whole endpoint is unchanged.
	all, err := f.agent.ListResources(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var both []string
	for _, r := range all.Resources {
		both = append(both, r.URI)
	}
	if !slices.Contains(both, evDoc) || !slices.Contains(both, stDoc) {
		t.Errorf("/mcp lists %v; a bundle must not narrow it", both)
	}
}
