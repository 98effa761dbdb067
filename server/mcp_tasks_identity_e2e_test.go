package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/identity"
)

// TestMCPTasksSkipPerUserIdentity: server-everything's task-required
// simulate-research-query imported twice from one HTTP upstream, ev_ under
// the static identity and pu_ under passthrough (an upstream_identity tool
// rule). A task's follow-ups would go on the upstream's shared session
// with the static credential, so the gateway carries no tasks of pu_: a
// 2025-11-25 caller is offered ev_research (execution required) and not
// pu_research, and a task-augmented call of pu_research gets the answer
// of a tool that cannot run as a task (the unknown tool's), never reaching
// the pipeline; the gateway says why once.
func TestMCPTasksSkipPerUserIdentity(t *testing.T) {
	node, script := everythingNode(t)
	upURL := startEverythingHTTP(t, node, script)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := func(name, upstream string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: upURL},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: upURL, Tool: upstream}}}
		})
	}
	p := server.DemoPolicy()
	p.UpstreamIdentity = identity.Config{Tools: []identity.Rule{{Match: "pu_*", Mode: identity.Passthrough}}}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), gatewaytest.WithLogOutput(logs),
		tool("ev_research", "simulate-research-query"), tool("pu_research", "simulate-research-query"))

	type listed struct {
		Name      string
		Execution json.RawMessage
	}
	// The face learns the upstream's execution in the background of a
	// listing: the static control says when it has.
	var got map[string]string
	if err := poll(30*time.Second, func() error {
		r := rpcPostVersion(t, ctx, env.MCPURL, "", "", "2025-11-25", "tools/list", map[string]any{})
		res := rpcResult[struct{ Tools []listed }](t, r, "tools/list")
		got = map[string]string{}
		for _, l := range res.Tools {
			got[l.Name] = string(l.Execution)
		}
		if got["ev_research"] != `{"taskSupport":"required"}` {
			return fmt.Errorf("ev_research's execution = %q; want taskSupport required (the static control)", got["ev_research"])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ex, ok := got["pu_research"]; ok {
		t.Errorf("pu_research is offered (execution %q); a task-required tool under a per-user identity is offered to no one", ex)
	}

	call := func(name string) (int64, string) {
		r := rpcPostVersion(t, ctx, env.MCPURL, "", "", "2025-11-25", "tools/call",
			map[string]any{"name": name, "arguments": map[string]any{"topic": "x"}, "task": map[string]any{"ttl": 60000}})
		e := rpcError(t, r, "tools/call "+name)
		return int64(e.Code), strings.ReplaceAll(e.Message, name, "TOOL")
	}
	puCode, puMsg := call("pu_research")
	unCode, unMsg := call("no_such_tool")
	if puCode != unCode || puMsg != unMsg {
		t.Errorf("a task-augmented call of pu_research: %d %q; want what a tool that cannot run as a task gets: %d %q", puCode, puMsg, unCode, unMsg)
	}
	if n := strings.Count(logs.String(), "relays no tasks of a tool under a per-user identity mode"); n != 1 {
		t.Errorf("the gateway said %d times why pu_research is not offered, want once", n)
	}
}
