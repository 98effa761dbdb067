package server_test

// Tasks of a stdio upstream through the gateway (issue 31 item 5): the
// real server-everything over stdio, whose simulate-research-query
// requires task augmentation. The go-sdk v1.8.0 client knows no tasks, so
// the gateway sends its task requests beside it on the process's one
// connection (internal/mcpupstream/side.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// TestMCPTasksStdio: over stdio and legacy HTTP+SSE (one stream each), a
// task-augmented call of the upstream's
// task-required tool makes a task, read (tasks/get), listed (tasks/list),
// waited on (tasks/result: the report) and cancelled (tasks/cancel, then
// tasks/get says cancelled, as the upstream does) through the gateway;
// another caller gets "not found" for it, as for an id no one has;
// tasks/result is held to the tool's max_result_bytes; once the process
// runs, the tool is listed to a 2025-11-25 caller with its
// execution.taskSupport and to no caller that cannot use tasks; no answer
// names the upstream's task id.
func TestMCPTasksStdio(t *testing.T) {
	node, script := everythingNode(t)
	for _, up := range []struct {
		name, url string
		transport registry.MCPTransport
	}{
		{"stdio", "stdio://everything", ""},
		{"legacy SSE", startEverythingSSE(t, node, script), registry.MCPTransportSSE},
	} {
		t.Run(up.name, func(t *testing.T) { oneStreamTasks(t, node, script, up.url, up.transport) })
	}
}

// oneStreamTasks is TestMCPTasksStdio against server-everything at url
// (stdio://everything: the gateway runs node script stdio).
func oneStreamTasks(t *testing.T, node, script, url string, transport registry.MCPTransport) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tool := func(name string, maxResult int64) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"topic"},
				"properties": map[string]any{"topic": map[string]any{"type": "string"}}})
			return registry.Tool{Name: name, InputSchema: schema, MaxResultBytes: maxResult,
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "simulate-research-query", Transport: transport}}}
		})
	}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(twoCallers()),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
		}),
		tool("st_research", 0), tool("st_research_small", 200), gatewaytest.WithLogOutput(logs))
	var answers []string
	keep := func(r *jsonrpc.Response) *jsonrpc.Response {
		j, _ := json.Marshal(r)
		answers = append(answers, string(j))
		return r
	}
	create := func(key, tool, topic string) *jsonrpc.Response {
		return keep(rpcPost(t, ctx, env.MCPURL, key, "", "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"topic": topic},
			"task": map[string]any{"ttl": 60000}}))
	}
	taskReq := func(key, method, id string) *jsonrpc.Response {
		return keep(rpcPost(t, ctx, env.MCPURL, key, "", method, map[string]any{"taskId": id}))
	}

	// The first call starts node, which may take seconds on a loaded machine.
	created := rpcResult[struct{ Task taskWire }](t, create("key-a", "st_research", "tides"), "create")
	id := created.Task.TaskID
	if !mcptasks.ValidID(id) || created.Task.Status != "working" || created.Task.CreatedAt == "" {
		t.Fatalf("CreateTaskResult's task = %+v; want a gateway id, working", created.Task)
	}
	got := rpcResult[taskWire](t, taskReq("key-a", "tasks/get", id), "tasks/get")
	if got.TaskID != id || (got.Status != "working" && got.Status != "completed") {
		t.Fatalf("tasks/get = %+v; want the task under the gateway's id", got)
	}
	unknown := mcptasks.NewID()
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs := rpcError(t, taskReq("key-b", method, id), "b "+method)
		none := rpcError(t, taskReq("key-b", method, unknown), "b "+method+" of an unknown id")
		if theirs.Code != none.Code || strings.ReplaceAll(theirs.Message, id, "ID") != strings.ReplaceAll(none.Message, unknown, "ID") {
			t.Fatalf("b's %s of a's task = %v; of an unknown id = %v; want the same answer", method, theirs, none)
		}
	}
	list := rpcResult[struct{ Tasks []taskWire }](t, keep(rpcPost(t, ctx, env.MCPURL, "key-a", "", "tasks/list", map[string]any{})), "tasks/list")
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != id {
		t.Fatalf("a's tasks/list = %+v; want the task", list.Tasks)
	}
	res := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
		Meta    map[string]any `json:"_meta"`
	}](t, taskReq("key-a", "tasks/result", id), "tasks/result")
	related, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "Research Report: tides") || related["taskId"] != id {
		t.Fatalf("tasks/result = %+v; want the report, related to the gateway's task id", res)
	}
	if done := rpcResult[taskWire](t, taskReq("key-a", "tasks/get", id), "tasks/get after the result"); done.Status != "completed" {
		t.Fatalf("tasks/get after tasks/result = %+v; want completed", done)
	}

	// Cancelled: the upstream's own status says so afterwards.
	second := rpcResult[struct{ Task taskWire }](t, create("key-a", "st_research", "reefs"), "second create")
	cancelled := rpcResult[taskWire](t, taskReq("key-a", "tasks/cancel", second.Task.TaskID), "tasks/cancel")
	if cancelled.Status != "cancelled" || cancelled.TaskID != second.Task.TaskID {
		t.Fatalf("tasks/cancel = %+v; want cancelled", cancelled)
	}
	if after := rpcResult[taskWire](t, taskReq("key-a", "tasks/get", second.Task.TaskID), "tasks/get after cancel"); after.Status != "cancelled" {
		t.Fatalf("tasks/get after tasks/cancel = %+v; want cancelled", after)
	}

	// tasks/result is held to the tool's max_result_bytes.
	small := rpcResult[struct{ Task taskWire }](t, create("key-a", "st_research_small", "dunes"), "create small")
	capped := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
	}](t, taskReq("key-a", "tasks/result", small.Task.TaskID), "tasks/result over the cap")
	if !capped.IsError || len(capped.Content) == 0 || !strings.Contains(capped.Content[0].Text, "max_result_bytes") {
		t.Fatalf("tasks/result over max_result_bytes = %+v; want the size guard's tool error", capped)
	}

	// The process runs: the tool is listed, with its execution, to a
	// 2025-11-25 caller, and to no caller that cannot use tasks.
	auth := http.Header{"Authorization": {"Bearer key-a"}}
	latest := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: auth})
	if err := poll(30*time.Second, func() error {
		if names := toolNames(t, ctx, latest); slices.Contains(names, "st_research") {
			return fmt.Errorf("a 2026-07-28 caller is still offered %v", names)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	listed := rpcResult[struct {
		Tools []struct {
			Name      string
			Execution *struct{ TaskSupport string } `json:"execution"`
		}
	}](t, rpcPost(t, ctx, env.MCPURL, "key-a", "", "tools/list", map[string]any{}), "2025-11-25 tools/list")
	found := false
	for _, tl := range listed.Tools {
		if tl.Name == "st_research" {
			found = tl.Execution != nil && tl.Execution.TaskSupport == "required"
		}
	}
	if !found {
		t.Fatalf("a 2025-11-25 caller's tools/list = %+v; want st_research with execution.taskSupport required", listed.Tools)
	}
	if l := logs.String(); !strings.Contains(l, "listed only to callers that can use tasks") {
		t.Errorf("the log does not say to whom st_research is listed:\n%s", l)
	}
	for _, ans := range answers {
		if strings.Contains(ans, "stdio://") || strings.Contains(ans, node) || strings.Contains(ans, "127.0.0.1") {
			t.Fatalf("an answer names the upstream: %s", ans)
		}
	}
}

// TestMCPTaskInputStdio: a stdio upstream's task asks its caller for input
// (server-everything's simulate-research-query, ambiguous), and the answer
// reaches it — for a 2025-11-25 caller on its tasks/result stream, while
// another call is in flight on the same process (the request is the
// task's by its related-task, not by being the only one in flight); and
// for a 2026-07-28 caller of the tasks extension through tasks/get and
// tasks/update (the answer written on the process's connection later).
// The upstream proves it: its report names the interpretation answered.
func TestMCPTaskInputStdio(t *testing.T) {
	node, script := everythingNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := sessionKeyFile(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(aliceAndBobPolicy()),
		everythingTool("ev_research", "stdio://everything", "simulate-research-query"),
		everythingTool("ev_long", "stdio://everything", "trigger-long-running-operation"),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
		}))

	t.Run("tasks/result stream", func(t *testing.T) {
		sid := faceSession(t, ctx, env.MCPURL, "alice-key", map[string]any{"elicitation": map[string]any{}})
		id := createResearchTask(t, ctx, env.MCPURL, "alice-key", sid, "ev_research")
		// Another call in flight on the process all along.
		long := make(chan *jsonrpc.Response, 1)
		go func() {
			long <- rpcPost(t, ctx, env.MCPURL, "bob-key", "", "tools/call", map[string]any{"name": "ev_long", "arguments": map[string]any{"duration": 8, "steps": 2}})
		}()
		time.Sleep(500 * time.Millisecond)
		stream := taskResultStream(t, ctx, env.MCPURL, "alice-key", sid, id)
		ask := stream.next(t)
		raw, _ := json.Marshal(ask)
		askID, _ := ask["id"].(string)
		params, _ := ask["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
		if ask["method"] != "elicitation/create" || !strings.HasPrefix(askID, "flowdrop-input-") || related["taskId"] != id {
			t.Fatalf("first event on tasks/result %s; want elicitation/create under a gateway id, related to the gateway's task", raw)
		}
		resp := post2025(t, ctx, env.MCPURL, "alice-key", sid,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"interpretation":"snake"}}}`, askID))
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("alice's answer: HTTP %d, want 202", resp.StatusCode)
		}
		res, more := untilAnswer(t, stream)
		raw, _ = json.Marshal(res)
		if len(more) != 0 || !strings.Contains(reportText(res["result"]), "python (snake)") {
			t.Fatalf("tasks/result after the answer: %s (and requests %v); want the report on the interpretation answered", raw, more)
		}
		if r := <-long; r.Error != nil || !strings.Contains(string(r.Result), "Long running operation completed") {
			t.Fatalf("the call in flight beside the task: %v %s", r.Error, r.Result)
		}
	})

	t.Run("tasks extension", func(t *testing.T) {
		caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}
		r := extPostCaps(t, ctx, env.MCPURL, "alice-key", "tools/call", "ev_research", caps, map[string]any{"name": "ev_research",
			"arguments": map[string]any{"topic": "python", "ambiguous": true}}).mustResult(t, "create")
		id, _ := r["taskId"].(string)
		if r["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call: %v, want a task", r)
		}
		get := func() map[string]any {
			return extPostCaps(t, ctx, env.MCPURL, "alice-key", "tasks/get", id, caps, map[string]any{"taskId": id}).mustResult(t, "tasks/get")
		}
		var got map[string]any
		if err := poll(60*time.Second, func() error {
			if got = get(); got["status"] != "input_required" {
				return fmt.Errorf("tasks/get: %v", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		reqs, _ := got["inputRequests"].(map[string]any)
		if len(reqs) != 1 {
			t.Fatalf("tasks/get: %v; want one input request", got)
		}
		var k string
		for k = range reqs {
		}
		answer := map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"interpretation": "snake"}}}
		extPostCaps(t, ctx, env.MCPURL, "alice-key", "tasks/update", id, caps, map[string]any{"taskId": id, "inputResponses": answer}).mustResult(t, "tasks/update")
		if err := poll(60*time.Second, func() error {
			if got = get(); got["status"] != "completed" && got["status"] != "failed" {
				return fmt.Errorf("tasks/get: %v", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got["status"] != "completed" || !strings.Contains(reportText(got["result"]), "python (snake)") {
			t.Fatalf("the task after the answer: %v; want completed with the report on the interpretation answered", got)
		}
	})
}

// TestMCPTaskInputStdioAcrossReplicas: a 2026-07-28 caller of the tasks
// extension answers its stdio task's request for input through replica B
// while the task lives on replica A's process (the request was read there,
// by A's tasks/get): the answer is relayed to A over Redis and written on
// its connection, and the upstream's report names the interpretation. An
// answer over the relay's bound is refused with the request still asked.
func TestMCPTaskInputStdioAcrossReplicas(t *testing.T) {
	node, script := everythingNode(t)
	rs := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := sessionKeyFile(t)
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(aliceAndBobPolicy()),
			everythingTool("ev_research", "stdio://everything", "simulate-research-query"), everythingTool("ev_echo", "stdio://everything", "echo"),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				c.Redis.Timeout = 2 * time.Second // the loaded CI machine
				c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
				c.Policy.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
			}))
	}
	a, b := replica(), replica()
	// A's process runs (a call starts it; a listing does not) and A has
	// read its tools' task support before the task is asked for.
	if r := rpcPost(t, ctx, a.MCPURL, "alice-key", "", "tools/call", map[string]any{"name": "ev_echo", "arguments": map[string]any{"message": "hi"}}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if err := poll(30*time.Second, func() error {
		res := rpcResult[struct {
			Tools []struct {
				Name      string
				Execution json.RawMessage
			}
		}](t, rpcPost(t, ctx, a.MCPURL, "alice-key", "", "tools/list", map[string]any{}), "tools/list on A")
		for _, tl := range res.Tools {
			if tl.Name == "ev_research" && tl.Execution != nil {
				return nil
			}
		}
		return errors.New("A has not read ev_research's task support yet")
	}); err != nil {
		t.Fatal(err)
	}
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}
	r := extPostCaps(t, ctx, a.MCPURL, "alice-key", "tools/call", "ev_research", caps, map[string]any{"name": "ev_research",
		"arguments": map[string]any{"topic": "python", "ambiguous": true}}).mustResult(t, "create on A")
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v, want a task", r)
	}
	get := func(env *gatewaytest.Env) map[string]any {
		return extPostCaps(t, ctx, env.MCPURL, "alice-key", "tasks/get", id, caps, map[string]any{"taskId": id}).mustResult(t, "tasks/get")
	}
	var got map[string]any
	if err := poll(60*time.Second, func() error {
		if got = get(a); got["status"] != "input_required" || got["inputRequests"] == nil {
			return fmt.Errorf("tasks/get on A: %v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reqs, _ := got["inputRequests"].(map[string]any)
	var k string
	for k = range reqs {
	}
	// An answer over what the relay carries does not reach A: refused, and
	// the request is still asked.
	big := map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"interpretation": strings.Repeat("s", mcptasks.MaxRelayAnswerBytes)}}}
	if a := extPostCaps(t, ctx, b.MCPURL, "alice-key", "tasks/update", id, caps, map[string]any{"taskId": id, "inputResponses": big}); a.err == nil ||
		a.err.Code != mcpapi.MCPCodeUpstreamUnavailable || !strings.Contains(a.err.Message, "still asked") {
		t.Fatalf("tasks/update on B with an answer over the relay's bound: %.300s; want -32011, the request still asked", a.raw)
	}
	if still, _ := get(b)["inputRequests"].(map[string]any); still[k] == nil {
		t.Fatalf("after an answer that was not delivered, tasks/get shows %v; want %s still asked", still, k)
	}
	answer := map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"interpretation": "snake"}}}
	extPostCaps(t, ctx, b.MCPURL, "alice-key", "tasks/update", id, caps, map[string]any{"taskId": id, "inputResponses": answer}).mustResult(t, "tasks/update on B")
	if err := poll(60*time.Second, func() error {
		if got = get(b); got["status"] != "completed" && got["status"] != "failed" {
			return fmt.Errorf("tasks/get on B: %v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got["status"] != "completed" || !strings.Contains(reportText(got["result"]), "python (snake)") {
		t.Fatalf("the task after the answer through B: %v; want completed with the report on the interpretation answered", got)
	}
}
