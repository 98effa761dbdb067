package server_test

// MCP tasks through the gateway (issue 31 item 5), against the real
// server-everything over streamable HTTP, whose simulate-research-query
// requires task augmentation, and two gateway replicas sharing a real
// redis-server. The go-sdk v1.8.0 has no tasks in its client, so the
// tasks requests are raw JSON-RPC over HTTP in the SDK's framing; the SDK's
// client reads the tool list.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// rpcPost sends one JSON-RPC request to url as a 2025-11-25 client does
// (stateless: no session) and returns the response.
func rpcPost(t *testing.T, ctx context.Context, url, key, sid, method string, params any) *jsonrpc.Response {
	t.Helper()
	return rpcPostVersion(t, ctx, url, key, sid, "2025-11-25", method, params)
}

// rpcPostVersion is rpcPost as a client on protocol revision version.
func rpcPostVersion(t *testing.T, ctx context.Context, url, key, sid, version, method string, params any) *jsonrpc.Response {
	t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if version >= "2026-07-28" {
		req.Header.Set("Mcp-Method", method) // SEP-2243
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	_, _, r := doRPC(t, method, req)
	return r
}

// doRPC sends req (a JSON-RPC request named method) and returns the HTTP
// status, the answering message's text (the last event of a stream) and
// the response it decodes to; anything else fails t.
func doRPC(t *testing.T, method string, req *http.Request) (int, []byte, *jsonrpc.Response) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				last = bytes.Clone(d)
			}
		}
		data = last
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		t.Fatalf("%s: HTTP %d, %q: %v", method, resp.StatusCode, data, err)
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("%s: not a response: %q", method, data)
	}
	return resp.StatusCode, data, r
}

// taskOf decodes a task (tasks/get, tasks/cancel; CreateTaskResult's task).
type taskWire struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	TTL           *int64 `json:"ttl"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

func rpcResult[T any](t *testing.T, r *jsonrpc.Response, what string) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("%s: %v", what, r.Error)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("%s: %s: %v", what, r.Result, err)
	}
	return v
}

func rpcError(t *testing.T, r *jsonrpc.Response, what string) *jsonrpc.Error {
	t.Helper()
	var e *jsonrpc.Error
	if r.Error == nil || !asRPC(r.Error, &e) {
		t.Fatalf("%s: answered %s; want a JSON-RPC error", what, r.Result)
	}
	return e
}

func asRPC(err error, e **jsonrpc.Error) bool {
	je, ok := err.(*jsonrpc.Error)
	*e = je
	return ok
}

// Two replicas on one Redis: alice's task made through A is read, waited
// on and cancelled through B; bob can neither see nor cancel it (the same
// answer as for an id no one has); the cancellation reaches the upstream
// (asked there, in the task's own session); policy, validation and the
// result size cap hold as for a call.
func TestMCPTasksAcrossReplicas(t *testing.T) {
	node, script := everythingNode(t)
	upURL := startEverythingHTTP(t, node, script)
	rs := redistest.Start(t)
	// A guard against hanging: two research tasks take ~4 s each upstream.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "alice", SHA256: policy.HashAPIKey("alice-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "bob", SHA256: policy.HashAPIKey("bob-key"), Roles: []string{policy.RoleInvoker}},
		{Name: "carol", SHA256: policy.HashAPIKey("carol-key"), Roles: []string{policy.RoleInvoker}},
	}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
		"alice": {Allow: []string{"ev_*"}},
		"bob":   {Allow: []string{"ev_*"}},
		"carol": {Allow: []string{"*"}, Deny: []string{"ev_research"}},
	}}
	tool := func(name string, maxResult int64) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"topic"},
				"properties": map[string]any{"topic": map[string]any{"type": "string"}}})
			return registry.Tool{Name: name, InputSchema: schema, MaxResultBytes: maxResult, Origin: &registry.Origin{MCPUpstream: upURL},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: upURL, Tool: "simulate-research-query"}}}
		})
	}
	replica := func(logs io.Writer) *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), tool("ev_research", 0), tool("ev_research_small", 200),
			gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() }), gatewaytest.WithLogOutput(logs))
	}
	logs := &syncBuffer{}
	a, b := replica(logs), replica(io.Discard)
	upHost := strings.TrimSuffix(strings.TrimPrefix(upURL, "http://"), "/mcp")
	var answers []string
	keep := func(r *jsonrpc.Response) *jsonrpc.Response {
		j, _ := json.Marshal(r)
		answers = append(answers, string(j))
		return r
	}
	create := func(env *gatewaytest.Env, key, tool string, args map[string]any) *jsonrpc.Response {
		return keep(rpcPost(t, ctx, env.MCPURL, key, "", "tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}}))
	}
	taskReq := func(env *gatewaytest.Env, key, method, id string) *jsonrpc.Response {
		return keep(rpcPost(t, ctx, env.MCPURL, key, "", method, map[string]any{"taskId": id}))
	}

	// Made through A.
	created := rpcResult[struct{ Task taskWire }](t, create(a, "alice-key", "ev_research", map[string]any{"topic": "tides"}), "create on A")
	id := created.Task.TaskID
	if !mcptasks.ValidID(id) || created.Task.Status != "working" || created.Task.CreatedAt == "" {
		t.Fatalf("CreateTaskResult's task = %+v; want a gateway id, working", created.Task)
	}
	// Read through B.
	got := rpcResult[taskWire](t, taskReq(b, "alice-key", "tasks/get", id), "tasks/get on B")
	if got.TaskID != id || (got.Status != "working" && got.Status != "completed") {
		t.Fatalf("tasks/get on B = %+v; want the task under the gateway's id", got)
	}
	// Not bob's: the same answer as for an id no one has, for every method.
	unknown := mcptasks.NewID()
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs := rpcError(t, taskReq(b, "bob-key", method, id), "bob "+method)
		none := rpcError(t, taskReq(b, "bob-key", method, unknown), "bob "+method+" of an unknown id")
		if theirs.Code != none.Code || strings.ReplaceAll(theirs.Message, id, "ID") != strings.ReplaceAll(none.Message, unknown, "ID") {
			t.Fatalf("bob %s of alice's task = %v; of an unknown id = %v; want the same answer", method, theirs, none)
		}
	}
	bobList := rpcResult[struct{ Tasks []taskWire }](t, keep(rpcPost(t, ctx, a.MCPURL, "bob-key", "", "tasks/list", map[string]any{})), "bob tasks/list")
	if len(bobList.Tasks) != 0 {
		t.Fatalf("bob's tasks/list = %+v; want none", bobList.Tasks)
	}
	aliceList := rpcResult[struct{ Tasks []taskWire }](t, keep(rpcPost(t, ctx, a.MCPURL, "alice-key", "", "tasks/list", map[string]any{})), "alice tasks/list")
	if len(aliceList.Tasks) != 1 || aliceList.Tasks[0].TaskID != id {
		t.Fatalf("alice's tasks/list = %+v; want her task", aliceList.Tasks)
	}
	// Its result through B, once the upstream has it (tasks/result waits).
	res := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
		Meta    map[string]any `json:"_meta"`
	}](t, taskReq(b, "alice-key", "tasks/result", id), "tasks/result on B")
	related, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "Research Report: tides") || related["taskId"] != id {
		t.Fatalf("tasks/result on B = %+v; want the report, related to the gateway's task id", res)
	}

	// Cancelled through B, made through A; checked on the upstream's side,
	// in the task's own session.
	second := rpcResult[struct{ Task taskWire }](t, create(a, "alice-key", "ev_research", map[string]any{"topic": "reefs"}), "second create")
	cancelled := rpcResult[taskWire](t, taskReq(b, "alice-key", "tasks/cancel", second.Task.TaskID), "tasks/cancel on B")
	if cancelled.Status != "cancelled" || cancelled.TaskID != second.Task.TaskID {
		t.Fatalf("tasks/cancel = %+v; want cancelled", cancelled)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	stored, err := rdb.Get(ctx, "flowdrop:{task}:t:"+second.Task.TaskID).Bytes()
	if err != nil {
		t.Fatalf("the task's record in redis: %v", err)
	}
	rec, err := mcptasks.Decode(stored)
	if err != nil || rec.Session == "" || rec.UpstreamID == "" || rec.UpstreamID == second.Task.TaskID {
		t.Fatalf("the record %+v, %v; want the upstream's session and own id", rec, err)
	}
	upstream := rpcResult[taskWire](t, rpcPost(t, ctx, upURL, "", rec.Session, "tasks/get", map[string]any{"taskId": rec.UpstreamID}), "tasks/get at the upstream")
	if upstream.Status != "cancelled" {
		t.Fatalf("the upstream says the task is %q; want cancelled", upstream.Status)
	}

	// The task store not answering is not "task not found" (the task may
	// well exist): -32011, try again; once the store answers, it is there.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "1500", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		paused := rpcError(t, taskReq(b, "alice-key", method, second.Task.TaskID), method+" with the task store paused")
		if paused.Code != mcpapi.MCPCodeUpstreamUnavailable || !strings.Contains(paused.Message, "task store did not answer") {
			t.Fatalf("%s with the task store paused = %v; want %d, the store named", method, paused, mcpapi.MCPCodeUpstreamUnavailable)
		}
	}
	if err := poll(10*time.Second, func() error {
		r := taskReq(b, "alice-key", "tasks/get", second.Task.TaskID)
		if r.Error != nil {
			return r.Error
		}
		return nil
	}); err != nil {
		t.Fatalf("tasks/get once the store answers again: %v", err)
	}

	// Creation is a call: the policy and the arguments' validation apply.
	denied := rpcError(t, create(a, "carol-key", "ev_research", map[string]any{"topic": "x"}), "carol's task")
	absent := rpcError(t, create(a, "carol-key", "ev_nothing", map[string]any{"topic": "x"}), "a task of no tool")
	if denied.Code != absent.Code || strings.ReplaceAll(denied.Message, "ev_research", "T") != strings.ReplaceAll(absent.Message, "ev_nothing", "T") {
		t.Fatalf("a denied tool's task = %v, no tool's = %v; want the same answer", denied, absent)
	}
	invalid := rpcResult[struct {
		IsError bool
		Meta    map[string]any `json:"_meta"`
	}](t, create(a, "alice-key", "ev_research", map[string]any{"topic": 7}), "a task with invalid arguments")
	if !invalid.IsError || invalid.Meta["flowdrop/reason"] != "arguments-invalid" {
		t.Fatalf("a task with invalid arguments = %+v; want the call's arguments-invalid tool error", invalid)
	}
	// tasks/result is held to the tool's max_result_bytes.
	small := rpcResult[struct{ Task taskWire }](t, create(b, "alice-key", "ev_research_small", map[string]any{"topic": "dunes"}), "create small")
	capped := rpcResult[struct {
		Content []struct{ Text string }
		IsError bool
	}](t, taskReq(a, "alice-key", "tasks/result", small.Task.TaskID), "tasks/result over the cap")
	if !capped.IsError || len(capped.Content) == 0 || !strings.Contains(capped.Content[0].Text, "max_result_bytes") {
		t.Fatalf("tasks/result over max_result_bytes = %+v; want the size guard's tool error", capped)
	}
	// A caller that cannot use tasks (2026-07-28, the go-sdk client's
	// default) is not offered the task-required tools, once the gateway has
	// read the upstream (in the background of a listing); one on 2025-11-25
	// is, and the log says why the others are not.
	auth := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
	latest := mustConnect(t, ctx, a.MCPURL, mcpClientOpts{header: auth("alice-key")})
	if err := poll(30*time.Second, func() error {
		if names := toolNames(t, ctx, latest); slices.Contains(names, "ev_research") || slices.Contains(names, "ev_research_small") {
			return fmt.Errorf("a 2026-07-28 caller is still offered %v", names)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	withTasks := mustConnect(t, ctx, a.MCPURL, mcpClientOpts{header: auth("alice-key"), version: "2025-11-25"})
	if names := toolNames(t, ctx, withTasks); !slices.Contains(names, "ev_research") {
		t.Fatalf("a 2025-11-25 caller is offered %v; want ev_research among them", names)
	}
	// initialize declares tasks to a 2025-11-25 caller, and to no other.
	initialize := func(version string) map[string]any {
		r := rpcPost(t, ctx, a.MCPURL, "alice-key", "", "initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "test", "version": "1"}})
		return rpcResult[struct{ Capabilities map[string]any }](t, r, "initialize "+version).Capabilities
	}
	if caps := initialize("2025-11-25"); caps["tasks"] == nil || caps["tools"] == nil {
		t.Fatalf("2025-11-25 initialize declares %v; want tools and tasks", caps)
	}
	if caps := initialize("2025-06-18"); caps["tasks"] != nil || caps["tools"] == nil {
		t.Fatalf("2025-06-18 initialize declares %v; want tools, no tasks", caps)
	}
	if l := logs.String(); !strings.Contains(l, "requires task augmentation") || !strings.Contains(l, "ev_research") {
		t.Fatalf("the log does not say why ev_research is not offered:\n%s", l)
	}
	for _, ans := range answers {
		if strings.Contains(ans, upHost) || strings.Contains(ans, rec.Session) || strings.Contains(ans, rec.UpstreamID) {
			t.Fatalf("an answer names the upstream, its session or its task id: %s", ans)
		}
	}
}
