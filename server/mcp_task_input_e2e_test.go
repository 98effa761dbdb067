package server_test

// Input into a task (issue 31 items 5 and 6; server/mcpapi/taskinput.go):
// the real server-everything over streamable HTTP, whose
// simulate-research-query (tasks required) asks for a clarification with
// elicitation/create on the stream of tasks/result when its topic is
// ambiguous and its client declared elicitation; two gateway replicas on a
// real redis-server. A 2025-11-25 caller is asked on its own tasks/result
// stream and answers by POST through the other replica; a 2026-07-28
// caller of the tasks extension sees inputRequests on tasks/get and
// answers with tasks/update through the other replica. The upstream
// proves the answer reached it: its report names the interpretation
// chosen, or says elicitation was unavailable when it was refused.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpconformancefixture"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// taskInputFleet is two replicas (a, b) on one redis-server with face
// sessions, fronting two server-everything processes: ev_research's, and
// ev_forbidden's, whose elicitation the policy forbids.
type taskInputFleet struct {
	a, b    *gatewaytest.Env
	rdb     *redis.Client
	upHosts []string
}

func startTaskInputFleet(t *testing.T) *taskInputFleet {
	t.Helper()
	node, script := everythingNode(t)
	up, forbidden := startEverythingHTTP(t, node, script), startEverythingHTTP(t, node, script)
	rs := redistest.Start(t)
	key := sessionKeyFile(t)
	p := aliceAndBobPolicy()
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p), everythingTool("ev_research", up, "simulate-research-query"), everythingTool("ev_forbidden", forbidden, "simulate-research-query"),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				c.Redis.Timeout = 2 * time.Second // the loaded CI machine: 100 ms is not a store outage there
				c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
				c.Policy.MCPUpstreams.Input.Forbid = map[string][]string{forbidden: {pipeline.InputElicitation}}
			}))
	}
	f := &taskInputFleet{a: replica(), b: replica(), rdb: redis.NewClient(&redis.Options{Addr: rs.Addr()})}
	t.Cleanup(func() { f.rdb.Close() })
	for _, u := range []string{up, forbidden} {
		f.upHosts = append(f.upHosts, strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp"))
	}
	return f
}

// record is the task's record in Redis.
func (f *taskInputFleet) record(t *testing.T, ctx context.Context, id string) mcptasks.Record {
	t.Helper()
	return redisTaskRecord(t, ctx, f.rdb, id)
}

// redisTaskRecord is the record of task id in the fleet's Redis.
func redisTaskRecord(t *testing.T, ctx context.Context, rdb *redis.Client, id string) mcptasks.Record {
	t.Helper()
	b, err := rdb.Get(ctx, "flowdrop:{task}:t:"+id).Bytes()
	if err != nil {
		t.Fatalf("the task's record in redis: %v", err)
	}
	rec, err := mcptasks.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// noLeak fails when text names an upstream, the task's upstream session or
// the upstream's task id.
func (f *taskInputFleet) noLeak(t *testing.T, rec mcptasks.Record, text string) {
	t.Helper()
	for _, s := range append([]string{rec.Session, rec.UpstreamID}, f.upHosts...) {
		if strings.Contains(text, s) {
			t.Fatalf("a message to the caller names %q (the upstream's): %s", s, text)
		}
	}
}

// faceSession initializes a 2025-11-25 face session for key declaring caps.
func faceSession(t *testing.T, ctx context.Context, url, key string, caps map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": map[string]any{"name": "task-input", "version": "1"}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	return sid
}

// post2025 POSTs body as a 2025-11-25 client of key in session sid ("":
// none) and returns the response.
func post2025(t *testing.T, ctx context.Context, url, key, sid, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+key)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// taskResultStream opens tasks/result (id 7) for task id on url.
func taskResultStream(t *testing.T, ctx context.Context, url, key, sid, id string) *rawSSE {
	t.Helper()
	resp := post2025(t, ctx, url, key, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tasks/result","params":{"taskId":%q}}`, id))
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tasks/result: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	return &rawSSE{resp: resp, sc: sc}
}

// untilAnswer reads s up to the answer to tasks/result (id 7), returning
// it and the requests met on the way.
func untilAnswer(t *testing.T, s *rawSSE) (answer map[string]any, requests []map[string]any) {
	t.Helper()
	for {
		m := s.next(t)
		if m["id"] == float64(7) && m["method"] == nil {
			return m, requests
		}
		if m["method"] != nil && m["id"] != nil {
			requests = append(requests, m)
		}
	}
}

// reportText is a CallToolResult's first text (in a JSON-RPC message's
// result, or a tasks/get's inline result).
func reportText(res any) string {
	r, _ := res.(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

func createResearchTask(t *testing.T, ctx context.Context, url, key, sid, tool string) string {
	t.Helper()
	r := rpcPost(t, ctx, url, key, sid, "tools/call", map[string]any{"name": tool,
		"arguments": map[string]any{"topic": "python", "ambiguous": true}, "task": map[string]any{"ttl": 60000}})
	return rpcResult[struct{ Task taskWire }](t, r, "create "+tool).Task.TaskID
}

// TestMCPTaskInputStream: a 2025-11-25 caller's task asks for input: the
// request reaches the caller on its tasks/result stream through replica A
// under a gateway id, naming the gateway's task; tasks/get through B says
// input_required; bob's answer is refused; alice's answer, POSTed to B,
// reaches the call on A over Redis and the upstream, whose report names
// the interpretation. A caller that cannot answer (no elicitation in its
// session, or no session) is not asked and the upstream gets an error (its
// report says elicitation was unavailable); an upstream the policy forbids
// to ask is never asked (the gateway's session did not declare it).
func TestMCPTaskInputStream(t *testing.T) {
	f := startTaskInputFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid := faceSession(t, ctx, f.a.MCPURL, "alice-key", map[string]any{"elicitation": map[string]any{}})
	id := createResearchTask(t, ctx, f.a.MCPURL, "alice-key", sid, "ev_research")
	rec := f.record(t, ctx, id)
	stream := taskResultStream(t, ctx, f.a.MCPURL, "alice-key", sid, id)
	ask := stream.next(t)
	raw, _ := json.Marshal(ask)
	f.noLeak(t, rec, string(raw))
	askID, _ := ask["id"].(string)
	params, _ := ask["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if ask["method"] != "elicitation/create" || !strings.HasPrefix(askID, "flowdrop-input-") || related["taskId"] != id {
		t.Fatalf("first event on tasks/result %s; want elicitation/create under a gateway id, related to the gateway's task", raw)
	}
	if got := rpcResult[taskWire](t, rpcPost(t, ctx, f.b.MCPURL, "alice-key", "", "tasks/get", map[string]any{"taskId": id}), "tasks/get on B"); got.Status != "input_required" {
		t.Errorf("tasks/get on B while the task asks: %q, want input_required", got.Status)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"interpretation":"snake"}}}`, askID)
	resp := post2025(t, ctx, f.b.MCPURL, "bob-key", "", answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bob's answer to alice's request: HTTP %d, want 400", resp.StatusCode)
	}
	resp = post2025(t, ctx, f.b.MCPURL, "alice-key", sid, answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("alice's answer through B: HTTP %d, want 202 (carried to A)", resp.StatusCode)
	}
	res, more := untilAnswer(t, stream)
	raw, _ = json.Marshal(res)
	f.noLeak(t, rec, string(raw))
	if len(more) != 0 || !strings.Contains(reportText(res["result"]), "python (snake)") {
		t.Fatalf("tasks/result after the answer: %s (and requests %v); want the report on the interpretation answered", raw, more)
	}

	rows := []struct {
		name, reason, tool string
		caps               map[string]any
		session            bool
		want               string
	}{
		{"no capability", "the caller's session did not declare elicitation: the upstream is refused", "ev_research",
			map[string]any{"sampling": map[string]any{}}, true, "elicitation unavailable"},
		{"no session", "a caller without a face session cannot be asked", "ev_research", nil, false, "elicitation unavailable"},
		{"forbidden", "mcp_upstreams.input.forbid: the upstream's session did not declare elicitation, so it never asks", "ev_forbidden",
			map[string]any{"elicitation": map[string]any{}}, true, "Research Report: python\n"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			sid := ""
			if row.session {
				sid = faceSession(t, ctx, f.a.MCPURL, "alice-key", row.caps)
			}
			id := createResearchTask(t, ctx, f.a.MCPURL, "alice-key", sid, row.tool)
			res, asked := untilAnswer(t, taskResultStream(t, ctx, f.a.MCPURL, "alice-key", sid, id))
			if len(asked) != 0 || !strings.Contains(reportText(res["result"]), row.want) {
				t.Errorf("tasks/result: %v after requests %v; want no request and a report with %q (%s)", res, asked, row.want, row.reason)
			}
		})
	}
}

// TestMCPTaskInputExtension: a 2026-07-28 caller of the tasks extension:
// tasks/get through B shows input_required with the request under a
// gateway key, naming the gateway's task, kept in the task's record in
// Redis; bob's tasks/update is "not found"; an answer that is not an
// object, and answers over the bound, are refused and deliver nothing
// (the key still takes the real answer); alice's tasks/update through A is acked, the key
// leaves inputRequests, the answer reaches the upstream (its report names
// the interpretation), and the same key again is ignored. A caller that did
// not declare elicitation never sees input_required (its upstream is
// refused) and is told why in the task's statusMessage; the forbidden
// upstream never asks.
func TestMCPTaskInputExtension(t *testing.T) {
	f := startTaskInputFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}
	create := func(caps map[string]any, tool string) string {
		r := extPostCaps(t, ctx, f.a.MCPURL, "alice-key", "tools/call", tool, caps, map[string]any{"name": tool,
			"arguments": map[string]any{"topic": "python", "ambiguous": true}}).mustResult(t, "create "+tool)
		id, _ := r["taskId"].(string)
		if r["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call %s: %v, want a task", tool, r)
		}
		return id
	}
	get := func(env *gatewaytest.Env, caps map[string]any, id string) map[string]any {
		return extPostCaps(t, ctx, env.MCPURL, "alice-key", "tasks/get", id, caps, map[string]any{"taskId": id}).mustResult(t, "tasks/get")
	}
	// until polls tasks/get through env until ok, or fails t.
	until := func(env *gatewaytest.Env, caps map[string]any, id string, ok func(map[string]any) bool, saw func(map[string]any)) map[string]any {
		var last map[string]any
		if err := poll(60*time.Second, func() error {
			last = get(env, caps, id)
			if saw != nil {
				saw(last)
			}
			if ok(last) {
				return nil
			}
			return fmt.Errorf("tasks/get: %v", last)
		}); err != nil {
			t.Fatal(err)
		}
		return last
	}
	done := func(d map[string]any) bool { return d["status"] == "completed" || d["status"] == "failed" }

	id := create(caps, "ev_research")
	got := until(f.b, caps, id, func(d map[string]any) bool { return d["status"] == "input_required" }, nil)
	rec := f.record(t, ctx, id)
	raw, _ := json.Marshal(got)
	f.noLeak(t, rec, string(raw))
	reqs, _ := got["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("tasks/get: %s; want one input request", raw)
	}
	var key string
	for k := range reqs {
		key = k
	}
	req, _ := reqs[key].(map[string]any)
	params, _ := req["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	if !strings.HasPrefix(key, "fdi-") || req["method"] != "elicitation/create" || related["taskId"] != id ||
		!strings.Contains(fmt.Sprint(params["message"]), "python") {
		t.Fatalf("inputRequests %s; want the upstream's elicitation/create under a gateway key, related to the gateway's task", raw)
	}
	if rec.Input == nil || len(rec.Input.Pending) != 1 || rec.Input.Pending[0].Key != key {
		t.Fatalf("the task's record in redis holds %+v; want the request under %s", rec.Input, key)
	}
	update := func(who string, env *gatewaytest.Env, responses any) extAnswer {
		return extPostCaps(t, ctx, env.MCPURL, who, "tasks/update", id, caps, map[string]any{"taskId": id, "inputResponses": responses})
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"interpretation": "snake"}}}
	if a := update("bob-key", f.a, answer); a.err == nil || a.err.Code != -32602 || !strings.Contains(a.err.Message, "not found") {
		t.Fatalf("bob's tasks/update of alice's task: %s; want not found", a.raw)
	}
	if a := update("alice-key", f.a, map[string]any{key: "snake"}); a.err == nil || a.err.Code != -32602 {
		t.Fatalf("tasks/update with an answer that is not an object: %s; want -32602", a.raw)
	}
	big := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"interpretation": strings.Repeat("s", pipeline.InputMaxResponseBytes)}}}
	if a := update("alice-key", f.b, big); a.err == nil || a.err.Code != -32602 || !strings.Contains(a.err.Message, "over the gateway's bound") {
		t.Fatalf("tasks/update with inputResponses over 1 MiB: %.300s; want -32602 naming the bound", a.raw)
	}
	ack := update("alice-key", f.a, answer).mustResult(t, "tasks/update")
	if len(ack) != 2 || ack["resultType"] != "complete" || ack["_meta"] == nil {
		t.Fatalf("tasks/update ack %v; want {resultType: complete} (and the server's _meta) alone", ack)
	}
	if d := get(f.b, caps, id); d["inputRequests"] != nil {
		t.Fatalf("tasks/get after the answer: %v; want the answered key gone", d)
	}
	update("alice-key", f.b, answer).mustResult(t, "the same answer again (ignored)")
	final := until(f.a, caps, id, done, nil)
	if final["status"] != "completed" || !strings.Contains(reportText(final["result"]), "python (snake)") {
		t.Fatalf("the task after the answer: %v; want completed with the report on the interpretation answered", final)
	}

	rows := []struct {
		name, reason, tool string
		caps               map[string]any
		want               string
		told               bool
	}{
		{"no capability", "the tasks/get that started the reading declared no elicitation: the upstream is refused, the caller told", "ev_research",
			map[string]any{"extensions": map[string]any{tasksExt: map[string]any{}}}, "elicitation unavailable", true},
		{"forbidden", "mcp_upstreams.input.forbid: the upstream's session did not declare elicitation, so it never asks", "ev_forbidden",
			caps, "Research Report: python\n", false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			id := create(row.caps, row.tool)
			told := false
			final := until(f.b, row.caps, id, done, func(d map[string]any) {
				if d["status"] == "input_required" || d["inputRequests"] != nil {
					t.Errorf("tasks/get: %v; want no input asked (%s)", d, row.reason)
				}
				told = told || strings.Contains(fmt.Sprint(d["statusMessage"]), "did not declare it can answer (client capability elicitation)")
			})
			if told != row.told {
				t.Errorf("the caller was told of the refusal: %v, want %v (%s)", told, row.told, row.reason)
			}
			if final["status"] != "completed" || !strings.Contains(reportText(final["result"]), row.want) {
				t.Errorf("the task: %v; want completed with a report with %q (%s)", final, row.want, row.reason)
			}
		})
	}
}

// TestMCPTaskInputExpires: a request for input its caller leaves
// unanswered past its time is dropped from the task (the next tasks/get
// shows none) and its upstream is answered with an error: the conformance
// fixture's confirm_delete, which waits for its answer as long as its task
// lives, then fails. The request's expiry (pipeline.InputRelayMaxWait) is
// brought forward in the task's record in Redis rather than waited out.
func TestMCPTaskInputExpires(t *testing.T) {
	fx := mcpconformancefixture.StartTasks2025(t) // the bridge's record of requests read (not the extension's own)
	rs := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(func(string) registry.Tool {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		return registry.Tool{Name: "fx_confirm", InputSchema: schema, Origin: &registry.Origin{MCPUpstream: fx.URL},
			Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: fx.URL, Tool: "confirm_delete"}}}
	}), gatewaytest.WithConfig(func(c *server.Config) { c.Redis.Addr = rs.Addr() }))
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}
	created := extPostCaps(t, ctx, env.MCPURL, "", "tools/call", "fx_confirm", caps, map[string]any{"name": "fx_confirm",
		"arguments": map[string]any{"filename": "a.txt"}}).mustResult(t, "create")
	id, _ := created["taskId"].(string)
	get := func() map[string]any {
		return extPostCaps(t, ctx, env.MCPURL, "", "tasks/get", id, caps, map[string]any{"taskId": id}).mustResult(t, "tasks/get")
	}
	if err := poll(30*time.Second, func() error {
		if d := get(); d["inputRequests"] == nil {
			return fmt.Errorf("tasks/get: %v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	key := "flowdrop:{task}:t:" + id
	b, err := rdb.Get(ctx, key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := mcptasks.Decode(b)
	if err != nil || rec.Input == nil || len(rec.Input.Pending) != 1 {
		t.Fatalf("the task's record: %+v, %v; want one request awaiting its answer", rec.Input, err)
	}
	rec.Input.Pending[0].Expires = time.Now().Add(-time.Second).UnixMilli()
	if b, err = mcptasks.Encode(rec); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SetArgs(ctx, key, b, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
	if d := get(); d["inputRequests"] != nil || d["status"] == "input_required" {
		t.Fatalf("tasks/get after the request expired: %v; want it gone", d)
	}
	var final map[string]any
	if err := poll(30*time.Second, func() error {
		if final = get(); final["status"] != "failed" && final["status"] != "completed" {
			return fmt.Errorf("tasks/get: %v", final)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if final["status"] != "failed" {
		t.Fatalf("the task after its request expired: %v; want failed (its upstream answered an error)", final)
	}
}
