package server_test

// execution.taskSupport in tools/list (issue 31, item 5): a 2025-11-25
// caller, the revision whose tasks the gateway relays, is told which tools
// take tasks as their upstream says (server-everything's
// simulate-research-query requires them); no other caller is, and a tool
// whose upstream says nothing carries no execution. The same tool over
// stdio (its session on 2025-11-25, whose tasks the gateway relays beside
// the SDK's client) is listed alike once its server runs.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

func TestMCPToolsListTaskSupport(t *testing.T) {
	node, script := everythingNode(t)
	upURL := startEverythingHTTP(t, node, script)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := func(name, url, upstream string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: upstream}}}
		})
	}
	// The same server over stdio.
	p := server.DemoPolicy()
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
		tool("ev_research", upURL, "simulate-research-query"), tool("ev_echo", upURL, "echo"),
		tool("st_research", "stdio://everything", "simulate-research-query"), tool("st_echo", "stdio://everything", "echo"))

	type listed struct {
		Name        string
		InputSchema map[string]any
		Execution   json.RawMessage
	}
	list := func(version string) map[string]listed {
		params := map[string]any{}
		if version >= "2026-07-28" { // no initialize: each request says who asks
			params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: version, mcp.MetaKeyClientCapabilities: map[string]any{},
				mcp.MetaKeyClientInfo: map[string]any{"name": "test", "version": "1"}}
		}
		r := rpcPostVersion(t, ctx, env.MCPURL, "", "", version, "tools/list", params)
		res := rpcResult[struct {
			Tools      []json.RawMessage
			TTLMs      *int   `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		}](t, r, "tools/list "+version)
		if res.TTLMs == nil || *res.TTLMs != 0 || res.CacheScope != "private" {
			t.Fatalf("tools/list %s: ttlMs %v, cacheScope %q; want the SDK's 0, private", version, res.TTLMs, res.CacheScope)
		}
		out := map[string]listed{}
		for _, raw := range res.Tools {
			var l listed
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			out[l.Name] = l
		}
		return out
	}
	// A stdio server is started by a call, not by a listing.
	started := rpcPostVersion(t, ctx, env.MCPURL, "", "", "2025-11-25", "tools/call", map[string]any{"name": "st_echo", "arguments": map[string]any{"message": "hi"}})
	if r := rpcResult[struct{ IsError bool }](t, started, "tools/call st_echo"); r.IsError {
		t.Fatalf("tools/call st_echo: %s", started.Result)
	}
	// The face learns the upstream's execution in the background of a
	// listing: the first listings may say nothing yet.
	var tasks map[string]listed
	if err := poll(30*time.Second, func() error {
		tasks = list("2025-11-25")
		if got := string(tasks["ev_research"].Execution); got != `{"taskSupport":"required"}` {
			return fmt.Errorf("ev_research's execution on 2025-11-25 = %s; want taskSupport required", got)
		}
		if got := string(tasks["st_research"].Execution); got != `{"taskSupport":"required"}` {
			return fmt.Errorf("st_research's execution on 2025-11-25 = %s; want taskSupport required", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ev_echo", "st_echo"} {
		echo, ok := tasks[name]
		if !ok || echo.Execution != nil || echo.InputSchema["type"] != "object" {
			t.Fatalf("2025-11-25 listing = %+v; want %s without execution, with its schema", tasks, name)
		}
	}
	if tasks["ev_research"].InputSchema["type"] != "object" {
		t.Fatalf("2025-11-25 listing = %+v; want ev_research with its schema", tasks)
	}
	for _, version := range []string{"2025-06-18", "2026-07-28"} {
		tools := list(version)
		for _, name := range []string{"ev_research", "st_research"} {
			if _, ok := tools[name]; ok {
				t.Fatalf("a %s caller, who cannot use tasks, is offered %s", version, name)
			}
		}
		for name, l := range tools {
			if l.Execution != nil {
				t.Fatalf("a %s caller is told %s's execution %s; that revision is served no tasks", version, name, l.Execution)
			}
		}
		if _, ok := tools["ev_echo"]; !ok || tools["st_echo"].Name == "" {
			t.Fatalf("a %s caller is not offered ev_echo and st_echo: %v", version, tools)
		}
	}
	// The go-sdk's client reads the listing with execution in it.
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{version: "2025-11-25"})
	if names := toolNames(t, ctx, cs); !slices.Contains(names, "ev_echo") || !slices.Contains(names, "ev_research") {
		t.Fatalf("the go-sdk client on 2025-11-25 lists %v; want ev_echo and ev_research among them", names)
	}
}
