package server_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// querySecret travels in a read's URI query, as template variables and
// tokens do: the audit line must not record it.
const querySecret = "fd-audit-secret-8c41e2"

// TestMCPFederatesResources: an upstream's resources and resource
// templates, under the face's URI scheme, listed per caller (its resource
// allow and deny lists, and only upstreams in its view) and read through
// the gateway within the backend receive limit, each read audited; the
// capabilities declare resources only to a caller that is served them.
func TestMCPFederatesResources(t *testing.T) {
	f := startFederation(t)
	doc, err := os.ReadFile(everythingDir + "/dist/docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("capabilities", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason, key, version string
			resources, streams         bool
		}{
			{"agent-2025", "initialize declares resources: an upstream in the caller's view offers them; no stream, so neither subscribe nor listChanged", "agent-key", "2025-11-25", true, false},
			{"agent-2026", "server/discover declares the same, with subscribe and listChanged (relayed on subscriptions/listen)", "agent-key", "2026-07-28", true, true},
			{"toolsonly", "no resource allow list: resources are not declared", "toolsonly-key", "2025-11-25", false, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				caps := f.connect(tc.key, tc.version).InitializeResult().Capabilities
				if (caps.Resources != nil) != tc.resources || caps.Tools == nil {
					t.Fatalf("%s: capabilities %+v", tc.reason, caps)
				}
				if caps.Resources != nil && (caps.Resources.Subscribe != tc.streams || caps.Resources.ListChanged != tc.streams) {
					t.Fatalf("%s: resources %+v", tc.reason, caps.Resources)
				}
			})
		}
	})
	t.Run("resources", func(t *testing.T) {
		list, err := f.agent.ListResources(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keep(list)
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
			if !strings.HasPrefix(r.URI, "flowdrop-mcp://ev_/") && !strings.HasPrefix(r.URI, "flowdrop-mcp://st_/") {
				t.Errorf("resource %q is not namespaced", r.URI)
			}
		}
		for _, want := range []string{evDoc, stDoc, evBig} {
			if !slices.Contains(uris, want) {
				t.Errorf("listed %v, want %s among them", uris, want)
			}
		}
		if slices.Contains(uris, evDenied) {
			t.Errorf("the caller's resource deny pattern is ignored in the listing: %v", uris)
		}
		for _, uri := range []string{evDoc, stDoc} {
			r, err := f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			f.keep(r)
			if len(r.Contents) != 1 || r.Contents[0].Text != string(doc) || r.Contents[0].URI != uri {
				t.Fatalf("read %s: %+v", uri, r.Contents)
			}
		}
		for _, tc := range []struct{ name, reason, uri string }{
			{"denied-pattern", "the resource deny list refuses the read, as not found", evDenied},
			{"no-such-namespace", "a namespace no upstream has", "flowdrop-mcp://zz_/demo://resource/static/document/architecture.md"},
			{"not-the-scheme", "an upstream's own URI reaches nothing", "demo://resource/static/document/architecture.md"},
			{"no-such-resource", "the upstream's not-found is the same answer", "flowdrop-mcp://ev_/demo://resource/static/document/nothing.md"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: tc.uri})
				if code := f.rpcCode(err); code != jsonrpc.CodeInvalidParams {
					t.Fatalf("%s: got %v (code %d), want resource not found", tc.reason, err, code)
				}
			})
		}
		started := f.stdioStarts()
		for _, uri := range []string{evBig, stBig} {
			_, err := f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
			if code := f.rpcCode(err); code != mcpapi.MCPCodeUpstreamTooLarge || !strings.Contains(err.Error(), "8192 bytes") {
				t.Fatalf("an upstream resource over the backend receive limit is refused: %s: %v (code %d)", uri, err, code)
			}
		}
		// The refusal leaves the upstream's session sound: the stdio
		// server is not ended and started again.
		if _, err := f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: stDoc}); err != nil {
			t.Fatalf("read %s right after an oversized answer was refused: %v", stDoc, err)
		}
		if n := f.stdioStarts(); n != started {
			t.Fatalf("the stdio server was started %d times more for a refused answer", n-started)
		}
	})

	t.Run("templates", func(t *testing.T) {
		list, err := f.agent.ListResourceTemplates(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keep(list)
		var got []string
		for _, tm := range list.ResourceTemplates {
			got = append(got, tm.URITemplate)
		}
		if !slices.Contains(got, evTmpl) || !slices.Contains(got, strings.Replace(evTmpl, "ev_", "st_", 1)) {
			t.Fatalf("templates %v, want %s (and its st_ twin)", got, evTmpl)
		}
		uri := strings.Replace(evTmpl, "{resourceId}", "3", 1)
		r, err := f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].URI != uri || !strings.Contains(r.Contents[0].Text, "3") {
			t.Fatalf("read of a template's URI %s: %+v %v", uri, r, err)
		}
		// Whatever the upstream answers, the read is audited with its
		// query redacted (checked with the audit lines below).
		_, _ = f.agent.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: evDoc + "?api_key=" + querySecret})
	})

	t.Run("denied-upstream", func(t *testing.T) {
		res, err := f.denied.ListResources(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keep(res)
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, "flowdrop-mcp://ev_/") {
				t.Fatalf("a caller denied ev_'s tools lists its resource %s", r.URI)
			}
		}
		if len(res.Resources) == 0 {
			t.Fatal("the control: the st_ upstream's resources are listed")
		}
		tmpls, err := f.denied.ListResourceTemplates(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tm := range tmpls.ResourceTemplates {
			if strings.HasPrefix(tm.URITemplate, "flowdrop-mcp://ev_/") {
				t.Fatalf("a denied upstream's template is listed: %s", tm.URITemplate)
			}
		}
		_, err = f.denied.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: evDoc})
		if code := f.rpcCode(err); code != jsonrpc.CodeInvalidParams {
			t.Fatalf("reading a denied upstream's resource by its URI: %v (code %d), want not found", err, code)
		}
	})
	t.Run("no-resource-allow-list", func(t *testing.T) {
		_, err := f.toolsOnly.ListResources(f.ctx, nil)
		if code := f.rpcCode(err); code != jsonrpc.CodeMethodNotFound {
			t.Fatalf("resources/list for a caller without a resource allow list: %v (code %d), want method not found", err, code)
		}
		_, err = f.toolsOnly.ReadResource(f.ctx, &mcp.ReadResourceParams{URI: evDoc})
		if code := f.rpcCode(err); code != jsonrpc.CodeMethodNotFound {
			t.Fatalf("resources/read for a caller without a resource allow list: %v (code %d)", err, code)
		}
	})

	f.checkNoUpstreamNamed(t)
	got := f.auditLines(t)
	if raw, err := os.ReadFile(f.audit); err != nil || strings.Contains(string(raw), querySecret) {
		t.Errorf("the audit file (read error %v) records a read URI's query value %q, which must be redacted", err, querySecret)
	}
	if !slices.ContainsFunc(got, func(a federatedAudit) bool {
		return a.op == "resources/read" && a.tool == evDoc+"?"+policy.Redacted
	}) {
		t.Errorf("no audit line of the read with a query, as %s, among %+v", evDoc+"?"+policy.Redacted, got)
	}
	for _, want := range []federatedAudit{
		{"resources/read", evDoc, "allow", "null"},
		{"resources/read", evDenied, "deny", "null"},
		{"resources/read", evBig, "error", "null"},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no audit line %+v among %+v", want, got)
		}
	}
}
