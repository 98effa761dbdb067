package server_test

// Tasks of a stdio upstream across the replicas of a fleet (issue 31 item
// 5): each replica runs its own server-everything process, so a task
// lives on the connection of the replica that made it; another replica
// relays its requests there over the fleet's Redis
// (internal/redisstate/taskrelay.go).

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// TestMCPTasksStdioAcrossReplicas: a task made through replica A on its
// own connection to the upstream — its stdio process; its legacy HTTP+SSE
// session — is read (tasks/get), listed (tasks/list), waited on
// (tasks/result: the report) and cancelled (tasks/cancel; then tasks/get
// on A says cancelled) — all through B; another caller still gets "not
// found" through B; a relayed tasks/result is held to max_result_bytes; a
// record naming a connection A no longer has is "not found"; with A
// stopped, its task is answered -32011 naming the replica holding it, not
// "not found"; no answer names the upstream.
func TestMCPTasksStdioAcrossReplicas(t *testing.T) {
	node, script := everythingNode(t)
	t.Run("stdio", func(t *testing.T) {
		fleetTasks(t, node, "stdio://everything", map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}})
	})
	t.Run("sse", func(t *testing.T) {
		fleetTasks(t, node, startEverythingSSE(t, node, script), nil)
	})
}

// fleetTasks runs TestMCPTasksStdioAcrossReplicas against the upstream at
// url (stdio: the servers each replica runs).
func fleetTasks(t *testing.T, node, url string, stdio map[string]mcpupstream.Command) {
	rs := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tool := func(name string, maxResult int64) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"topic"},
				"properties": map[string]any{"topic": map[string]any{"type": "string"}}})
			return registry.Tool{Name: name, InputSchema: schema, MaxResultBytes: maxResult,
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "simulate-research-query"}}}
		})
	}
	replica := func(logs io.Writer) *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()), tool("st_research", 0), tool("st_research_small", 200),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				c.Policy.MCPUpstreams.Stdio = stdio
			}), gatewaytest.WithLogOutput(logs))
	}
	a, b := replica(io.Discard), replica(io.Discard)
	var answers []string
	keep := func(r *jsonrpc.Response) *jsonrpc.Response {
		j, _ := json.Marshal(r)
		answers = append(answers, string(j))
		return r
	}
	createOf := func(env *gatewaytest.Env, tool, topic string) string {
		t.Helper()
		created := rpcResult[struct{ Task taskWire }](t, keep(rpcPost(t, ctx, env.MCPURL, "key-a", "", "tools/call",
			map[string]any{"name": tool, "arguments": map[string]any{"topic": topic}, "task": map[string]any{"ttl": 60000}})), "create "+topic)
		if !mcptasks.ValidID(created.Task.TaskID) || created.Task.Status != "working" {
			t.Fatalf("CreateTaskResult's task = %+v; want a gateway id, working", created.Task)
		}
		return created.Task.TaskID
	}
	create := func(env *gatewaytest.Env, topic string) string { return createOf(env, "st_research", topic) }
	taskReq := func(env *gatewaytest.Env, key, method, id string) *jsonrpc.Response {
		return keep(rpcPost(t, ctx, env.MCPURL, key, "", method, map[string]any{"taskId": id}))
	}

	// Made through A (the first call starts A's node process).
	id := create(a, "tides")
	got := rpcResult[taskWire](t, taskReq(b, "key-a", "tasks/get", id), "tasks/get on B")
	if got.TaskID != id || (got.Status != "working" && got.Status != "completed") {
		t.Fatalf("tasks/get on B = %+v; want the task under the gateway's id", got)
	}
	// Not b's: through B, the same answer as for an id no one has.
	unknown := mcptasks.NewID()
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs := rpcError(t, taskReq(b, "key-b", method, id), "b "+method)
		none := rpcError(t, taskReq(b, "key-b", method, unknown), "b "+method+" of an unknown id")
		if theirs.Code != none.Code || strings.ReplaceAll(theirs.Message, id, "ID") != strings.ReplaceAll(none.Message, unknown, "ID") {
			t.Fatalf("b's %s of a's task = %v; of an unknown id = %v; want the same answer", method, theirs, none)
		}
	}
	list := rpcResult[struct{ Tasks []taskWire }](t, keep(rpcPost(t, ctx, b.MCPURL, "key-a", "", "tasks/list", map[string]any{})), "tasks/list on B")
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != id {
		t.Fatalf("tasks/list on B = %+v; want the task", list.Tasks)
	}
	res := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
		Meta    map[string]any `json:"_meta"`
	}](t, taskReq(b, "key-a", "tasks/result", id), "tasks/result on B")
	related, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "Research Report: tides") || related["taskId"] != id {
		t.Fatalf("tasks/result on B = %+v; want the report, related to the gateway's task id", res)
	}

	// Cancelled through B; A's own tasks/get says so afterwards.
	second := create(a, "reefs")
	cancelled := rpcResult[taskWire](t, taskReq(b, "key-a", "tasks/cancel", second), "tasks/cancel on B")
	if cancelled.Status != "cancelled" || cancelled.TaskID != second {
		t.Fatalf("tasks/cancel on B = %+v; want cancelled", cancelled)
	}
	if after := rpcResult[taskWire](t, taskReq(a, "key-a", "tasks/get", second), "tasks/get on A after the cancel"); after.Status != "cancelled" {
		t.Fatalf("tasks/get on A after tasks/cancel on B = %+v; want cancelled", after)
	}

	// The relayed tasks/result is held to the tool's max_result_bytes on B.
	small := createOf(a, "st_research_small", "dunes")
	capped := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
	}](t, taskReq(b, "key-a", "tasks/result", small), "tasks/result on B over the cap")
	if !capped.IsError || len(capped.Content) == 0 || !strings.Contains(capped.Content[0].Text, "max_result_bytes") {
		t.Fatalf("tasks/result on B over max_result_bytes = %+v; want the size guard's tool error", capped)
	}

	// A record naming A and a connection A no longer has (its process
	// ended and was started again): A says so, and B answers "not found".
	gone := create(a, "caves")
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rc.Close()
	key := "flowdrop:{task}:t:" + gone
	raw, err := rc.Get(ctx, key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := mcptasks.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	holder, _, ok := mcptasks.ParseHeldKey(rec.Session)
	if !ok {
		t.Fatalf("the record's session %q names no replica holding it", rec.Session)
	}
	rec.Session = mcptasks.HeldKey(holder, "0123456789abcdef01234567")
	if raw, err = mcptasks.Encode(rec); err != nil {
		t.Fatal(err)
	}
	if err := rc.SetArgs(ctx, key, raw, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
	if e := rpcError(t, taskReq(b, "key-a", "tasks/get", gone), "tasks/get on B of a task whose connection ended"); !strings.Contains(e.Message, "not found") {
		t.Fatalf("tasks/get on B of a task whose connection ended on A = %v; want not found", e)
	}

	// A stopped: its process, and the task on it, is out of reach — which
	// B cannot tell from its end, so it says the holder did not answer.
	third := create(a, "shoals")
	sctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := a.Gateway.Close(sctx); err != nil {
		t.Fatalf("closing A: %v", err)
	}
	// tasks/list leaves it out of the page, and keeps its record (the
	// requests after it are not "not found").
	listed := rpcResult[struct{ Tasks []taskWire }](t, keep(rpcPost(t, ctx, b.MCPURL, "key-a", "", "tasks/list", map[string]any{})), "tasks/list on B with A stopped")
	for _, tw := range listed.Tasks {
		if tw.TaskID == third {
			t.Fatalf("tasks/list on B with A stopped = %+v; want the unreachable task left out", listed.Tasks)
		}
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		e := rpcError(t, taskReq(b, "key-a", method, third), method+" on B with A stopped")
		if e.Code != mcpapi.MCPCodeUpstreamUnavailable || !strings.Contains(e.Message, "replica holding the task's upstream connection did not answer") {
			t.Fatalf("%s on B with A stopped = %v; want %d saying the replica holding the task did not answer", method, e, mcpapi.MCPCodeUpstreamUnavailable)
		}
	}
	for _, ans := range answers {
		if strings.Contains(ans, "stdio://") || strings.Contains(ans, node) || strings.Contains(ans, "held:") ||
			strings.Contains(ans, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/sse")) {
			t.Fatalf("an answer names the upstream or the task's connection: %s", ans)
		}
	}
}
