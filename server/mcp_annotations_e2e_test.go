package server_test

// MCP tools/list carries each tool's annotations (issue 15 item 3, the
// annotations part): the go-sdk client against a real gateway on loopback.

import (
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPToolsListCarriesAnnotations(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	annotated := func(name string, a *registry.ToolAnnotations) gatewaytest.Option {
		return gatewaytest.WithTool(func(backend string) registry.Tool {
			tool := gatewaytest.ObjectTool(name)(backend)
			tool.Annotations = a
			return tool
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		annotated("ann_all", &registry.ToolAnnotations{ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no}),
		annotated("ann_partial", &registry.ToolAnnotations{DestructiveHint: &yes}),
		annotated("ann_none", nil))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	got := map[string]*mcp.ToolAnnotations{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		got[tool.Name] = tool.Annotations
	}
	for _, tc := range []struct {
		tool   string
		want   *mcp.ToolAnnotations
		reason string
	}{
		{"ann_all", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no},
			"every hint set in the registry is advertised with its value"},
		{"ann_partial", &mcp.ToolAnnotations{DestructiveHint: &yes},
			"unset destructive/open-world hints stay unset (MCP's default true applies), unset read-only/idempotent are MCP's default false"},
		{"ann_none", nil, "a tool without annotations advertises none"},
	} {
		a, listed := got[tc.tool]
		if !listed {
			t.Errorf("%s: not listed (%s)", tc.tool, tc.reason)
			continue
		}
		if diff := cmp.Diff(tc.want, a); diff != "" {
			t.Errorf("%s annotations (-want +got) (%s):\n%s", tc.tool, tc.reason, diff)
		}
	}
}
