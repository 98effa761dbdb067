package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPFederatesCompletions: completion/complete relayed for the
// prompts and resource templates a caller may see, by their gateway names
// and URIs; never for a denied upstream's.
func TestMCPFederatesCompletions(t *testing.T) {
	f := startFederation(t)
	for _, key := range []string{"agent-key", "denied-key"} {
		if caps := f.connect(key, "2025-11-25").InitializeResult().Capabilities; caps.Completions == nil {
			t.Fatalf("%s: completions not declared, though its view's upstreams offer them: %+v", key, caps)
		}
	}
	t.Run("completions", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason string
			params       *mcp.CompleteParams
			want         []string
		}{
			{"prompt", "a prompt argument, by the prompt's gateway name", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ev_completable-prompt"},
				Argument: mcp.CompleteParamsArgument{Name: "department", Value: "En"}}, []string{"Engineering"}},
			{"prompt-context", "the context arguments reach the upstream", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "st_completable-prompt"},
				Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}, Context: &mcp.CompleteContext{Arguments: map[string]string{"department": "Engineering"}}}, []string{"Alice"}},
			{"template", "a resource template, by its gateway URI", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: evTmpl},
				Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "7"}}, []string{"7"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, err := f.agent.Complete(f.ctx, tc.params)
				if err != nil || !slices.Equal(r.Completion.Values, tc.want) {
					t.Fatalf("%s: %+v %v, want %v", tc.reason, r, err, tc.want)
				}
			})
		}
	})

	t.Run("denied-upstream", func(t *testing.T) {
		for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "ev_completable-prompt"}, {Type: "ref/resource", URI: evTmpl}} {
			_, err := f.denied.Complete(f.ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"}})
			if code := f.rpcCode(err); code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "unknown reference") {
				t.Fatalf("completing a denied upstream's %+v: %v (code %d)", ref, err, code)
			}
		}
		r, err := f.denied.Complete(f.ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "st_completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"}})
		if err != nil || !slices.Equal(r.Completion.Values, []string{"Sales", "Support"}) {
			t.Fatalf("the control: the st_ upstream's prompt completes: %+v %v", r, err)
		}
	})
	f.checkNoUpstreamNamed(t)
}
