package mcpconformancefixture

// Tasks of MCP 2026-07-28's tasks extension (SEP-2663,
// `io.modelcontextprotocol/tasks`), served beside the fixture's 2025-11-25
// tasks (tasks.go) over the same task runs: the fixture declares the
// extension in its capabilities, and a request that declares it in its
// per-request client capabilities is answered the extension's way — a
// tools/call of a task tool with a task (resultType "task", the task's
// members flat), tasks/get with the outcome inline or the task's requests
// for input (inputRequests, under the request ids they were made with),
// tasks/update delivering the answers, tasks/cancel acknowledged
// whatever the task's state. test_tool_with_task is the suite's
// tasks-mrtr-composition tool: required tasks; its first round asks for
// user_name with an InputRequiredResult (the SDK's handler), and the round
// that carries the answer is answered with a task whose result names the
// user.

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

func init() {
	taskSupport["test_tool_with_task"] = "required"
	TaskRequiredTools = append(TaskRequiredTools, "test_tool_with_task")
}

// withTasksExtension declares the extension in o's capabilities (on).
func withTasksExtension(o *mcp.ServerOptions, on bool) *mcp.ServerOptions {
	if on {
		o.Capabilities.AddExtension(TasksExtension, map[string]any{})
	}
	return o
}

// taskExtTools are the extension's tools (on): test_tool_with_task's first
// round.
func taskExtTools(on bool) []tool {
	if !on {
		return nil
	}
	return []tool{{&mcp.Tool{Name: "test_tool_with_task", Description: "MRTR, then a task: asks for user_name, then answers with a task (tasks: required)", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return inputRequired(mcp.InputRequestMap{"user_name": askName}, ""), nil
		}}}
}

// withTaskOutcome is test_tool_with_task's task: a moment's work, then a
// greeting naming the user gathered in the rounds.
func withTaskOutcome(ctx context.Context, args map[string]any) outcome {
	select {
	case <-ctx.Done():
		return outcome{}
	case <-time.After(300 * time.Millisecond):
	}
	name, _ := args["user_name"].(string)
	return outcome{result: text("Hello, " + name + ", from a task")}
}

// extRequest is what the extension's requests carry beyond rpcRequest.
type extRequest struct {
	Params struct {
		Meta           map[string]any             `json:"_meta"`
		Task           json.RawMessage            `json:"task"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	} `json:"params"`
}

// declared: the request's client capabilities name the extension.
func (e *extRequest) declared() bool {
	caps, _ := e.Params.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	v, ok := ext[TasksExtension]
	return ok && v != nil
}

// serveExt answers req the extension's way, or false: anything else goes
// on as before.
func (ts *tasks) serveExt(w http.ResponseWriter, body []byte, req *rpcRequest) bool {
	var e extRequest
	if req.Method == "" || json.Unmarshal(body, &e) != nil {
		return false
	}
	name := req.Params.Name
	switch {
	case req.Method == "tools/call" && taskSupport[name] != "" && len(e.Params.Task) == 0:
		if !e.declared() {
			if taskSupport[name] != "required" {
				return false // runs as a plain call
			}
			ts.answer(w, req.ID, nil, map[string]any{"code": mcp.CodeMissingRequiredClientCapabilities,
				"message": name + " runs only as a task: declare the " + TasksExtension + " extension",
				"data":    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}})
			return true
		}
		args := req.Params.Arguments
		if args == nil {
			args = map[string]any{}
		}
		if name == "test_tool_with_task" {
			a := accepted(&answer{Result: e.Params.InputResponses["user_name"]})
			user, ok := a["name"].(string)
			if !ok {
				return false // the first round: the SDK's handler asks
			}
			args["user_name"] = user
		}
		t := ts.start(name, args)
		created := t.extWire()
		created["resultType"] = "task"
		ts.answer(w, req.ID, created, nil)
		return true
	case req.Method == "tasks/get" || req.Method == "tasks/update" || req.Method == "tasks/cancel":
		if !e.declared() {
			return false
		}
		ts.mu.Lock()
		t := ts.byID[req.Params.TaskID]
		ts.mu.Unlock()
		if t == nil {
			ts.answer(w, req.ID, nil, map[string]any{"code": -32602, "message": "task not found"})
			return true
		}
		switch req.Method {
		case "tasks/get":
			ts.answer(w, req.ID, t.detailed(), nil)
		case "tasks/update":
			for id, res := range e.Params.InputResponses {
				ts.mu.Lock()
				ch := ts.waiting[id]
				delete(ts.waiting, id)
				ts.mu.Unlock()
				if ch != nil {
					t.unqueue(id)
					ch <- &answer{ID: id, Result: res}
				}
			}
			ts.answer(w, req.ID, map[string]any{"resultType": "complete"}, nil)
		default: // tasks/cancel: idempotent
			t.cancel()
			t.finish("cancelled", outcome{})
			ts.answer(w, req.ID, map[string]any{"resultType": "complete"}, nil)
		}
		return true
	}
	return false
}

// extWire is the task as the extension writes it.
func (t *task) extWire() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return map[string]any{"taskId": t.id, "status": t.status, "createdAt": t.created, "lastUpdatedAt": t.updated, "ttlMs": taskTTL, "pollIntervalMs": 200}
}

// detailed is the extension's tasks/get answer: a tool's result (an
// isError one too) is "completed" with it inline, a protocol error
// "failed" with it inline, and the requests for input not yet answered
// are inputRequests under their ids.
func (t *task) detailed() map[string]any {
	d := t.extWire()
	d["resultType"] = "complete"
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.status == "completed" || t.status == "failed" && t.out.result != nil:
		d["status"], d["result"] = "completed", t.out.result
	case t.status == "failed":
		d["error"] = map[string]any{"code": t.out.code, "message": t.out.msg}
	case t.status == "input_required":
		reqs := map[string]any{}
		for _, msg := range t.queue {
			var m struct {
				ID     string          `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(msg, &m) == nil {
				reqs[m.ID] = map[string]any{"method": m.Method, "params": m.Params}
			}
		}
		if len(reqs) > 0 {
			d["inputRequests"] = reqs
		}
	}
	return d
}

// unqueue drops the request id from the task's queue (answered).
func (t *task) unqueue(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.queue[:0]
	for _, msg := range t.queue {
		var m struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(msg, &m) == nil && m.ID == id {
			continue
		}
		kept = append(kept, msg)
	}
	t.queue = kept
}
