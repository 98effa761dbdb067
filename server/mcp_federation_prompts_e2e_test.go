package server_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/server/mcpapi"
)

// TestMCPFederatesPrompts: an upstream's prompts under their gateway
// names (the import prefix), listed per caller by its tool allow and deny
// lists; prompts/get arguments entity-decoded (RT-TOOL-8) and checked
// against the prompt's declared arguments before the upstream sees them;
// URIs in the answer in the face's form; each get audited, argument
// values redacted.
func TestMCPFederatesPrompts(t *testing.T) {
	f := startFederation(t)
	t.Run("capabilities", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason, key, version string
			listChanged                bool
		}{
			{"agent-2025", "initialize declares prompts: an upstream in the caller's view offers them; no stream, no listChanged", "agent-key", "2025-11-25", false},
			{"agent-2026", "server/discover declares the same, and listChanged (relayed on subscriptions/listen)", "agent-key", "2026-07-28", true},
			{"toolsonly", "prompts need no resource allow list", "toolsonly-key", "2025-11-25", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				caps := f.connect(tc.key, tc.version).InitializeResult().Capabilities
				if caps.Prompts == nil || caps.Prompts.ListChanged != tc.listChanged {
					t.Fatalf("%s: capabilities %+v (prompts %+v)", tc.reason, caps, caps.Prompts)
				}
			})
		}
	})
	t.Run("prompts", func(t *testing.T) {
		list, err := f.agent.ListPrompts(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keep(list)
		var names []string
		for _, p := range list.Prompts {
			names = append(names, p.Name)
		}
		for _, want := range []string{"ev_args-prompt", "st_args-prompt", "ev_completable-prompt"} {
			if !slices.Contains(names, want) {
				t.Fatalf("prompts %v, want %s among them", names, want)
			}
		}
		for _, name := range []string{"ev_args-prompt", "st_args-prompt"} {
			// "S&atilde;o Paulo": RT-TOOL-8's entity decoding applies to
			// prompt arguments as to a tool's strings.
			r, err := f.agent.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"city": "S&atilde;o Paulo"}})
			if err != nil {
				t.Fatalf("get %s: %v", name, err)
			}
			f.keep(r)
			text := ""
			if len(r.Messages) == 1 {
				if tc, ok := r.Messages[0].Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			if text != "What's weather in São Paulo?" || r.Meta[mcpapi.MCPMetaRepairs] == nil {
				t.Fatalf("get %s: the upstream saw %q (repairs %v), want the decoded city", name, text, r.Meta[mcpapi.MCPMetaRepairs])
			}
		}
		for _, tc := range []struct {
			name, reason string
			args         map[string]string
			want         string
		}{
			{"missing-required", "city is required", map[string]string{"state": "SP"}, `missing required argument "city"`},
			{"undeclared", "an argument the prompt does not declare", map[string]string{"city": "x", "cmd": "rm"}, `argument "cmd" is not one the prompt declares`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.agent.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "ev_args-prompt", Arguments: tc.args})
				if code := f.rpcCode(err); code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: %v (code %d)", tc.reason, err, code)
				}
			})
		}
		r, err := f.agent.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "ev_resource-prompt", Arguments: map[string]string{"resourceType": "Text", "resourceId": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		f.keep(r)
		embedded := false
		for _, msg := range r.Messages {
			if e, ok := msg.Content.(*mcp.EmbeddedResource); ok {
				embedded = true
				if !strings.HasPrefix(e.Resource.URI, "flowdrop-mcp://ev_/demo://") {
					t.Fatalf("an embedded resource's URI is the upstream's own: %q", e.Resource.URI)
				}
			}
		}
		if !embedded {
			t.Fatalf("resource-prompt embeds no resource: %+v", r.Messages)
		}
	})

	t.Run("denied-upstream", func(t *testing.T) {
		prompts, err := f.denied.ListPrompts(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keep(prompts)
		for _, p := range prompts.Prompts {
			if strings.HasPrefix(p.Name, "ev_") {
				t.Fatalf("a denied upstream's prompt is listed: %s", p.Name)
			}
		}
		if len(prompts.Prompts) == 0 {
			t.Fatal("the control: the st_ upstream's prompts are listed")
		}
		_, err = f.denied.GetPrompt(f.ctx, &mcp.GetPromptParams{Name: "ev_args-prompt", Arguments: map[string]string{"city": "x"}})
		if code := f.rpcCode(err); code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "unknown prompt") {
			t.Fatalf("getting a denied upstream's prompt by its name: %v (code %d)", err, code)
		}
	})
	f.checkNoUpstreamNamed(t)
	got := f.auditLines(t)
	for _, want := range []federatedAudit{
		{"prompts/get", "ev_args-prompt", "allow", `{"city":"[REDACTED]"}`},
		{"prompts/get", "ev_args-prompt", "deny", `{"city":"[REDACTED]"}`},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no audit line %+v among %+v", want, got)
		}
	}
	if raw, _ := os.ReadFile(f.audit); strings.Contains(string(raw), "atilde") || strings.Contains(string(raw), "São") {
		t.Error("a prompt argument's value is in the audit log")
	}
}
