package server_test

// The 2026-07-28 tasks extension (SEP-2663, io.modelcontextprotocol/tasks)
// through the gateway (issue 31 item 5), bridged to the 2025-11-25 tasks of
// the real server-everything over streamable HTTP (simulate-research-query
// requires tasks), on two gateway replicas sharing a real redis-server.
// The go-sdk v1.8.0 client has no tasks extension, so the requests are raw
// JSON-RPC over HTTP, each carrying its _meta as 2026-07-28 requires.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

const tasksExt = "io.modelcontextprotocol/tasks"

// extAnswer is one answer to a 2026-07-28 request: its HTTP status, the
// result as a JSON object, or the error.
type extAnswer struct {
	status int
	raw    string
	result map[string]any
	err    *jsonrpc.Error
}

// extPost sends method as a 2026-07-28 client: the _meta triple (with the
// tasks extension when optIn), Mcp-Method, and Mcp-Name (name; "" sends
// none).
func extPost(t *testing.T, ctx context.Context, url, key, method, name string, optIn bool, params map[string]any) extAnswer {
	t.Helper()
	caps := map[string]any{}
	if optIn {
		caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	}
	return extPostCaps(t, ctx, url, key, method, name, caps, params)
}

// extPostCaps is extPost declaring the client capabilities caps.
func extPostCaps(t *testing.T, ctx context.Context, url, key, method, name string, caps, params map[string]any) extAnswer {
	t.Helper()
	p := map[string]any{"_meta": map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: caps,
		mcp.MetaKeyClientInfo: map[string]any{"name": "ext-test", "version": "1"}}}
	for k, v := range params {
		p[k] = v
	}
	pj, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, pj)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	status, data, r := doRPC(t, method, req)
	a := extAnswer{status: status, raw: string(data)}
	if r.Error != nil {
		je, ok := r.Error.(*jsonrpc.Error)
		if !ok {
			t.Fatalf("%s: error %v", method, r.Error)
		}
		a.err = je
		return a
	}
	if err := json.Unmarshal(r.Result, &a.result); err != nil {
		t.Fatalf("%s: %s: %v", method, r.Result, err)
	}
	return a
}

func (a extAnswer) mustResult(t *testing.T, what string) map[string]any {
	t.Helper()
	if a.err != nil {
		t.Fatalf("%s: %v (HTTP %d)", what, a.err, a.status)
	}
	return a.result
}

func (a extAnswer) mustError(t *testing.T, what string, code int64, status int) *jsonrpc.Error {
	t.Helper()
	if a.err == nil || a.err.Code != code || a.status != status {
		t.Fatalf("%s: HTTP %d %s; want error %d with HTTP %d", what, a.status, a.raw, code, status)
	}
	return a.err
}

// Two replicas on one Redis, a 2026-07-28 caller opting in per request:
// server/discover declares the extension; the task-required tool is listed
// to callers that opt in and only them; a tools/call through A answers a
// flat CreateTaskResult; tasks/get through B follows it to completed with
// the report inline; a second task made through A is cancelled through B
// (checked at the upstream, in the task's session) and cancelling it again
// is the same ack; bob cannot reach alice's task (the answer for an id no
// one has); a caller that does not opt in gets -32021 naming the
// extension; the removed methods are "method not found"; Mcp-Name must be
// the task's id.
func TestMCPTasksExtensionAcrossReplicas(t *testing.T) {
	node, script := everythingNode(t)
	upURL := startEverythingHTTP(t, node, script)
	rs := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p := aliceAndBobPolicy()
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
			everythingTool("ev_research", upURL, "simulate-research-query"), everythingTool("ev_echo", upURL, "echo"),
			gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() }))
	}
	a, b := replica(), replica()
	var answers []string
	post := func(env *gatewaytest.Env, key, method, name string, optIn bool, params map[string]any) extAnswer {
		ans := extPost(t, ctx, env.MCPURL, key, method, name, optIn, params)
		answers = append(answers, ans.raw)
		return ans
	}
	call := func(env *gatewaytest.Env, key string, optIn bool, tool string, args map[string]any) extAnswer {
		return post(env, key, "tools/call", tool, optIn, map[string]any{"name": tool, "arguments": args})
	}
	task := func(env *gatewaytest.Env, key, method, id string, optIn bool) extAnswer {
		params := map[string]any{"taskId": id}
		if method == "tasks/update" {
			params["inputResponses"] = map[string]any{}
		}
		return post(env, key, method, id, optIn, params)
	}
	toolsOf := func(optIn bool) []string {
		res := post(a, "alice-key", "tools/list", "", optIn, nil).mustResult(t, "tools/list")
		var names []string
		for _, tl := range res["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		return names
	}

	// Declared, and the task-required tool listed to callers that opt in,
	// once the face has read the upstream (in the background of a listing).
	if err := poll(30*time.Second, func() error {
		caps, _ := post(a, "alice-key", "server/discover", "", false, nil).mustResult(t, "server/discover")["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		if _, ok := ext[tasksExt]; !ok || caps["tasks"] != nil {
			return fmt.Errorf("server/discover declares %v; want extensions[%s] and no v1 tasks", caps, tasksExt)
		}
		if names := toolsOf(true); !slices.Contains(names, "ev_research") {
			return fmt.Errorf("a caller opting in is offered %v; want ev_research", names)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if names := toolsOf(false); slices.Contains(names, "ev_research") || !slices.Contains(names, "ev_echo") {
		t.Fatalf("a 2026-07-28 caller not opting in is offered %v; want ev_echo, not ev_research", names)
	}

	// Made through A: the task flat in the result.
	created := call(a, "alice-key", true, "ev_research", map[string]any{"topic": "tides"}).mustResult(t, "create on A")
	id, _ := created["taskId"].(string)
	ttl, _ := created["ttlMs"].(float64)
	if created["resultType"] != "task" || !mcptasks.ValidID(id) || created["status"] != "working" || created["task"] != nil ||
		ttl <= 0 || ttl != float64(int64(ttl)) || created["ttl"] != nil || created["createdAt"] == nil || created["lastUpdatedAt"] == nil {
		t.Fatalf("CreateTaskResult = %v; want resultType task, a gateway id, working, an integer ttlMs, flat", created)
	}
	// Followed through B to completion, the report inline.
	var done map[string]any
	if err := poll(30*time.Second, func() error {
		done = task(b, "alice-key", "tasks/get", id, true).mustResult(t, "tasks/get on B")
		if done["taskId"] != id || done["resultType"] != "complete" {
			return fmt.Errorf("tasks/get on B = %v; want the task, resultType complete", done)
		}
		if done["status"] != "completed" {
			if done["result"] != nil {
				return fmt.Errorf("a %v task carries a result: %v", done["status"], done)
			}
			return fmt.Errorf("status %v", done["status"])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	result, _ := done["result"].(map[string]any)
	content, _ := result["content"].([]any)
	meta, _ := result["_meta"].(map[string]any)
	if len(content) == 0 || !strings.Contains(fmt.Sprint(content[0]), "Research Report: tides") || result["isError"] == true || meta["io.modelcontextprotocol/related-task"] != nil {
		t.Fatalf("the completed task's result = %v; want the report, no related-task _meta", result)
	}

	// Not bob's: the answer for an id no one has, for every method.
	unknown := mcptasks.NewID()
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		theirs := task(b, "bob-key", method, id, true).mustError(t, "bob "+method, jsonrpc.CodeInvalidParams, http.StatusBadRequest)
		none := task(b, "bob-key", method, unknown, true).mustError(t, "bob "+method+" of an unknown id", jsonrpc.CodeInvalidParams, http.StatusBadRequest)
		if strings.ReplaceAll(theirs.Message, id, "ID") != strings.ReplaceAll(none.Message, unknown, "ID") {
			t.Fatalf("bob %s of alice's task = %v; of an unknown id = %v; want the same answer", method, theirs, none)
		}
	}
	// Nothing awaits an answer: tasks/update is acked and delivers nothing
	// (input into a task: mcp_task_input_e2e_test.go).
	if ack := task(b, "alice-key", "tasks/update", id, true).mustResult(t, "tasks/update"); ack["resultType"] != "complete" {
		t.Fatalf("tasks/update with nothing awaiting = %v; want the empty ack", ack)
	}

	// Cancelled through B, made through A: an empty ack, then cancelled,
	// at the upstream too; cancelling again is the same ack.
	second := call(a, "alice-key", true, "ev_research", map[string]any{"topic": "reefs"}).mustResult(t, "second create")
	sid, _ := second["taskId"].(string)
	for i := range 2 {
		ack := task(b, "alice-key", "tasks/cancel", sid, true).mustResult(t, "tasks/cancel on B")
		for _, k := range []string{"taskId", "status", "result", "error", "inputRequests"} {
			if _, ok := ack[k]; ok || ack["resultType"] != "complete" {
				t.Fatalf("tasks/cancel #%d = %v; want the empty ack", i+1, ack)
			}
		}
	}
	if got := task(a, "alice-key", "tasks/get", sid, true).mustResult(t, "tasks/get after cancel"); got["status"] != "cancelled" || got["result"] != nil {
		t.Fatalf("tasks/get after tasks/cancel = %v; want cancelled", got)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	stored, err := rdb.Get(ctx, "flowdrop:{task}:t:"+sid).Bytes()
	if err != nil {
		t.Fatalf("the task's record in redis: %v", err)
	}
	rec, err := mcptasks.Decode(stored)
	if err != nil || rec.Session == "" || rec.UpstreamID == "" {
		t.Fatalf("the record %+v, %v; want the upstream's session and id", rec, err)
	}
	upstream := rpcResult[taskWire](t, rpcPost(t, ctx, upURL, "", rec.Session, "tasks/get", map[string]any{"taskId": rec.UpstreamID}), "tasks/get at the upstream")
	if upstream.Status != "cancelled" {
		t.Fatalf("the upstream says the task is %q; want cancelled", upstream.Status)
	}

	// A caller that does not opt in: -32021 naming the extension, for the
	// task-required tool and for the task methods.
	for what, ans := range map[string]extAnswer{
		"tools/call":   call(a, "alice-key", false, "ev_research", map[string]any{"topic": "x"}),
		"tasks/get":    task(a, "alice-key", "tasks/get", id, false),
		"tasks/cancel": task(a, "alice-key", "tasks/cancel", id, false),
		"tasks/update": task(a, "alice-key", "tasks/update", id, false),
	} {
		e := ans.mustError(t, what+" without the extension", mcp.CodeMissingRequiredClientCapabilities, http.StatusBadRequest)
		var data mcp.MissingRequiredClientCapabilityData
		if json.Unmarshal(e.Data, &data) != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Extensions[tasksExt] == nil {
			t.Fatalf("%s without the extension: data %s; want requiredCapabilities.extensions[%s]", what, e.Data, tasksExt)
		}
	}
	// A tool whose upstream takes no tasks is a plain call, opted in or not.
	for _, optIn := range []bool{true, false} {
		echo := call(b, "alice-key", optIn, "ev_echo", map[string]any{"message": "hi"}).mustResult(t, "ev_echo")
		if echo["resultType"] != "complete" || echo["taskId"] != nil || echo["isError"] == true {
			t.Fatalf("ev_echo (opted in: %v) = %v; want a plain result", optIn, echo)
		}
	}
	// The extension removes tasks/result and tasks/list.
	for _, method := range []string{"tasks/result", "tasks/list"} {
		params := map[string]any{}
		if method == "tasks/result" {
			params["taskId"] = id
		}
		post(a, "alice-key", method, "", true, params).mustError(t, method, jsonrpc.CodeMethodNotFound, http.StatusNotFound)
	}
	// Mcp-Name is the task's id (SEP-2663 routing headers).
	post(a, "alice-key", "tasks/get", "fdt-other", true, map[string]any{"taskId": id}).mustError(t, "Mcp-Name mismatch", mcp.CodeHeaderMismatch, http.StatusBadRequest)

	upHost := strings.TrimSuffix(strings.TrimPrefix(upURL, "http://"), "/mcp")
	for _, ans := range answers {
		if strings.Contains(ans, upHost) || strings.Contains(ans, rec.Session) || strings.Contains(ans, rec.UpstreamID) {
			t.Fatalf("an answer names the upstream, its session or its task id: %s", ans)
		}
	}
}

// aliceAndBobPolicy is the demo policy with two invokers, alice and bob
// (API keys "alice-key", "bob-key"), each allowed the ev_* tools: one
// caller's task must stay out of the other's reach.
func aliceAndBobPolicy() server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "alice", SHA256: policy.HashAPIKey("alice-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "bob", SHA256: policy.HashAPIKey("bob-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"alice": {Allow: []string{"ev_*"}},
		"bob":   {Allow: []string{"ev_*"}},
	}}
	return p
}

// everythingTool registers name as upstream's tool of server-everything at
// url, imported from it (its origin), with an open object schema.
func everythingTool(name, url, upstream string) gatewaytest.Option {
	return gatewaytest.WithTool(func(string) registry.Tool {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: upstream}}}
	})
}
