package server_test

// Tasks of an upstream that speaks MCP 2026-07-28's tasks extension itself
// (issue 31 items 5 and 6; server/mcpapi/tasksextup.go,
// internal/mcpupstream/taskext.go): the conformance fixture's own go-sdk
// server (the go-sdk v1.8.0 server has no tasks; the fixture serves the
// extension in front of it: internal/mcpconformancefixture/tasksext.go),
// two gateway replicas on a real redis-server, callers alice and bob. The
// first round goes through the go-sdk client; the extension's requests,
// which that client does not have, are raw JSON-RPC (extPostCaps).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpconformancefixture"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// extUpstreamFleet is two replicas on one Redis fronting the fixture.
type extUpstreamFleet struct {
	a, b *gatewaytest.Env
	fx   *mcpconformancefixture.Server
	rdb  *redis.Client
	// answers are every answer a caller was given, for the leak check.
	answers []string
}

func startExtUpstreamFleet(t *testing.T) *extUpstreamFleet {
	t.Helper()
	fx := mcpconformancefixture.Start(t)
	rs := redistest.Start(t)
	fxTool := func(name, upstream string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: fx.URL},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: fx.URL, Tool: upstream}}}
		})
	}
	key := sessionKeyFile(t) // one key: a round sealed by one replica opens on the other
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(aliceAndBobPolicy()),
			fxTool("ev_with_task", "test_tool_with_task"), fxTool("ev_slow", "slow_compute"), fxTool("ev_confirm", "confirm_delete"),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
			}))
	}
	f := &extUpstreamFleet{a: replica(), b: replica(), fx: fx, rdb: redis.NewClient(&redis.Options{Addr: rs.Addr()})}
	t.Cleanup(func() { f.rdb.Close() })
	return f
}

// extCaps are a caller's capabilities: elicitation and the extension.
var extCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}

func (f *extUpstreamFleet) post(t *testing.T, ctx context.Context, env *gatewaytest.Env, key, method, name string, params map[string]any) extAnswer {
	t.Helper()
	ans := extPostCaps(t, ctx, env.MCPURL, key, method, name, extCaps, params)
	f.answers = append(f.answers, ans.raw)
	return ans
}

func (f *extUpstreamFleet) get(t *testing.T, ctx context.Context, env *gatewaytest.Env, key, id string) extAnswer {
	t.Helper()
	return f.post(t, ctx, env, key, "tasks/get", id, map[string]any{"taskId": id})
}

// record is the task's record in Redis.
func (f *extUpstreamFleet) record(t *testing.T, ctx context.Context, id string) mcptasks.Record {
	t.Helper()
	return redisTaskRecord(t, ctx, f.rdb, id)
}

// firstTask creates a task of tool for alice through A, opting in, once
// the face has read the fixture's task support (until then the call is a
// plain one), and checks it is recorded in the extension's dialect.
func (f *extUpstreamFleet) firstTask(t *testing.T, ctx context.Context, tool string, args map[string]any) (string, mcptasks.Record) {
	t.Helper()
	var id string
	if err := poll(30*time.Second, func() error {
		ans := f.post(t, ctx, f.a, "alice-key", "tools/call", tool, map[string]any{"name": tool, "arguments": args})
		if ans.err != nil || ans.result["resultType"] != "task" {
			return fmt.Errorf("tools/call %s = %s; want a task", tool, ans.raw)
		}
		id, _ = ans.result["taskId"].(string)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rec := f.record(t, ctx, id)
	if rec.Dialect != "ext" {
		t.Fatalf("the task's record = %+v; want the extension's dialect (the upstream asked its way)", rec)
	}
	return id, rec
}

// noLeak fails when an answer names the upstream's task id or the fixture.
func (f *extUpstreamFleet) noLeak(t *testing.T, rec mcptasks.Record) {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(f.fx.URL, "http://"), "/mcp")
	for _, a := range f.answers {
		if strings.Contains(a, rec.UpstreamID) || strings.Contains(a, host) {
			t.Fatalf("an answer names the upstream's task id or address: %s", a)
		}
	}
}

// untilStatus polls tasks/get through env until the task's status is one
// of want (or terminal), returning the last answer.
func (f *extUpstreamFleet) untilStatus(t *testing.T, ctx context.Context, env *gatewaytest.Env, key, id string, want ...string) map[string]any {
	t.Helper()
	var d map[string]any
	if err := poll(30*time.Second, func() error {
		d = f.get(t, ctx, env, key, id).mustResult(t, "tasks/get")
		for _, s := range append(want, "completed", "failed", "cancelled") {
			if d["status"] == s {
				return nil
			}
		}
		return fmt.Errorf("tasks/get = %v", d)
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

// extTask creates a task of tool through env for alice, opting in.
func (f *extUpstreamFleet) extTask(t *testing.T, ctx context.Context, env *gatewaytest.Env, tool string, args map[string]any) string {
	t.Helper()
	created := f.post(t, ctx, env, "alice-key", "tools/call", tool, map[string]any{"name": tool, "arguments": args}).mustResult(t, "create "+tool)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !mcptasks.ValidID(id) {
		t.Fatalf("tools/call %s = %v; want a task under a gateway id", tool, created)
	}
	return id
}

// TestMCPTasksExtensionUpstreamMRTR: test_tool_with_task asks alice for her
// name in a round (InputRequiredResult, relayed through replica A to the
// go-sdk client) and answers the round that carries it (through B) with a
// task: the caller gets a CreateTaskResult under a gateway id, with no
// round's requestState or inputRequests; the record in Redis keeps the
// upstream's id and the extension's dialect; tasks/get through A follows
// the upstream's own tasks/get to completed, the result naming Alice; bob
// gets the answer for an id no one has, for get, update and cancel; no
// answer names the upstream's task id or address.
func TestMCPTasksExtensionUpstreamMRTR(t *testing.T) {
	f := startExtUpstreamFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Round 1 through the go-sdk client on 2026-07-28, declaring
	// elicitation and the extension in the request's capabilities.
	// Its own round loop off: round 2 is answered with a task, which its
	// CallToolResult has no form for.
	cs := connectAsker(t, ctx, f.a.MCPURL, "alice-key", "2026-07-28", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, nil)
	var round1 *mcp.CallToolResult
	if err := poll(30*time.Second, func() error {
		var err error
		round1, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev_with_task", Arguments: map[string]any{},
			Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: extCaps}})
		if err != nil {
			return err
		}
		if round1.InputRequests == nil {
			return fmt.Errorf("round 1 = %+v; want an InputRequiredResult", round1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := round1.InputRequests["user_name"].(*mcp.ElicitParams); !ok || round1.RequestState == "" {
		t.Fatalf("round 1 asks %v (state %q); want user_name by elicitation, and the gateway's requestState", round1.InputRequests, round1.RequestState)
	}

	// Round 2 through B: answered with a task.
	created := f.post(t, ctx, f.b, "alice-key", "tools/call", "ev_with_task", map[string]any{"name": "ev_with_task", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}},
		"requestState":   round1.RequestState}).mustResult(t, "round 2")
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !mcptasks.ValidID(id) || created["requestState"] != nil || created["inputRequests"] != nil ||
		created["ttlMs"] == nil || created["createdAt"] == nil {
		t.Fatalf("round 2 = %v; want a CreateTaskResult under a gateway id, flat, without a round's members", created)
	}
	rec := f.record(t, ctx, id)
	if rec.Dialect != "ext" || rec.UpstreamID == "" || rec.UpstreamID == id || rec.Tool != "ev_with_task" {
		t.Fatalf("the task's record = %+v; want the extension's dialect and the upstream's own id", rec)
	}

	// Bob cannot reach it: the answer for an id no one has.
	nobody := f.get(t, ctx, f.a, "bob-key", "fdt-AAAAAAAAAAAAAAAAAAAAAA").mustError(t, "made-up id", jsonrpc.CodeInvalidParams, http.StatusBadRequest)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": id}
		if m == "tasks/update" {
			params["inputResponses"] = map[string]any{"user_name": map[string]any{"action": "decline"}}
		}
		e := f.post(t, ctx, f.b, "bob-key", m, id, params).mustError(t, "bob's "+m, jsonrpc.CodeInvalidParams, http.StatusBadRequest)
		if strings.Replace(e.Message, id, "fdt-AAAAAAAAAAAAAAAAAAAAAA", 1) != nobody.Message {
			t.Fatalf("bob's %s: %q; want the answer for an id no one has (%q)", m, e.Message, nobody.Message)
		}
	}

	done := f.untilStatus(t, ctx, f.a, "alice-key", id)
	if done["status"] != "completed" || !strings.Contains(reportText(done["result"]), "Alice") || done["taskId"] != id {
		t.Fatalf("the task done = %v; want completed, its result naming Alice", done)
	}
	f.noLeak(t, rec)
}

// TestMCPTasksExtensionUpstreamCancel: a task of the upstream's extension
// (slow_compute, a minute's work) cancelled through B is cancelled at the
// upstream (its own tasks/get, asked directly, says so); tasks/get through
// A says cancelled; cancelling again is the same ack.
func TestMCPTasksExtensionUpstreamCancel(t *testing.T) {
	f := startExtUpstreamFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, rec := f.firstTask(t, ctx, "ev_slow", map[string]any{"seconds": 60, "label": "x"})
	for range 2 {
		ack := f.post(t, ctx, f.b, "alice-key", "tasks/cancel", id, map[string]any{"taskId": id}).mustResult(t, "tasks/cancel")
		if ack["resultType"] != "complete" || len(ack) > 2 {
			t.Fatalf("tasks/cancel = %v; want the empty ack", ack)
		}
	}
	upstream := extPostCaps(t, ctx, f.fx.URL, "", "tasks/get", rec.UpstreamID, extCaps, map[string]any{"taskId": rec.UpstreamID}).mustResult(t, "the upstream's tasks/get")
	if upstream["status"] != "cancelled" {
		t.Fatalf("the upstream's task = %v; want cancelled", upstream)
	}
	if d := f.get(t, ctx, f.a, "alice-key", id).mustResult(t, "tasks/get"); d["status"] != "cancelled" {
		t.Fatalf("tasks/get after cancel = %v; want cancelled", d)
	}
	f.noLeak(t, rec)
}

// TestMCPTasksExtensionUpstreamInput: the upstream's task (confirm_delete)
// asks for input while it runs: tasks/get through A shows it
// input_required with the request, its related-task _meta naming the
// gateway's id; tasks/update through B delivers alice's answer to the
// upstream, whose task completes saying so. A caller that did not declare
// elicitation is not shown the request: the task is failed for it
// (-32021) and cancelled upstream.
func TestMCPTasksExtensionUpstreamInput(t *testing.T) {
	f := startExtUpstreamFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, rec := f.firstTask(t, ctx, "ev_confirm", map[string]any{"filename": "a.txt"})
	asked := f.untilStatus(t, ctx, f.a, "alice-key", id, "input_required")
	reqs, _ := asked["inputRequests"].(map[string]any)
	if asked["status"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("tasks/get = %v; want input_required with one request", asked)
	}
	var key string
	for k, r := range reqs {
		key = k
		req, _ := r.(map[string]any)
		params, _ := req["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
		if req["method"] != "elicitation/create" || rel["taskId"] != id {
			t.Fatalf("the task's request = %v; want elicitation/create naming the gateway's task", req)
		}
	}
	ack := f.post(t, ctx, f.b, "alice-key", "tasks/update", id, map[string]any{"taskId": id,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}).mustResult(t, "tasks/update")
	if ack["resultType"] != "complete" {
		t.Fatalf("tasks/update = %v; want the ack", ack)
	}
	done := f.untilStatus(t, ctx, f.a, "alice-key", id)
	if done["status"] != "completed" || reportText(done["result"]) != "Deleted a.txt" {
		t.Fatalf("the task done = %v; want completed, Deleted a.txt (the answer reached the upstream)", done)
	}
	f.noLeak(t, rec)

	// A caller that cannot answer elicitation.
	id2 := f.extTask(t, ctx, f.a, "ev_confirm", map[string]any{"filename": "b.txt"})
	rec2 := f.record(t, ctx, id2)
	var failed map[string]any
	if err := poll(30*time.Second, func() error {
		failed = extPost(t, ctx, f.a.MCPURL, "alice-key", "tasks/get", id2, true, map[string]any{"taskId": id2}).mustResult(t, "tasks/get")
		if failed["status"] != "failed" {
			return fmt.Errorf("tasks/get without elicitation = %v", failed)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if e, _ := failed["error"].(map[string]any); e["code"] != float64(-32021) || failed["inputRequests"] != nil {
		t.Fatalf("tasks/get without elicitation = %v; want failed with -32021, no request shown", failed)
	}
	upstream := extPostCaps(t, ctx, f.fx.URL, "", "tasks/get", rec2.UpstreamID, extCaps, map[string]any{"taskId": rec2.UpstreamID}).mustResult(t, "the upstream's tasks/get")
	if upstream["status"] != "cancelled" {
		t.Fatalf("the upstream's task = %v; want cancelled", upstream)
	}
}
