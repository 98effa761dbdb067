package mcpconformancefixture

// Tasks (MCP 2025-11-25, SEP-1686) of the fixture's task tools, so that a
// gateway fronting it can serve the suite's tasks-* scenarios (which speak
// 2026-07-28's extension, SEP-2663) by bridging to an upstream's tasks.
// The go-sdk v1.8.0 server has no tasks: its handler refuses the tasks/
// methods and drops params.task, and its Tool has no execution. So they
// are served here, in front of the SDK's handler: a task-augmented
// tools/call of a task tool starts the tool in the background and answers
// a CreateTaskResult; tasks/get, tasks/result (waiting for the end) and
// tasks/cancel answer for it; tools/list's answer gains each task tool's
// execution.taskSupport. The tools are the suite's (its reference
// server's): greet (no tasks), slow_compute (optional), failing_job
// (required: a tool error after ~1 s), protocol_error_job (optional: a
// protocol error). Every other request reaches the SDK as before.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TaskRequiredTools are the fixture's tools that run only as tasks.
var TaskRequiredTools = []string{"failing_job"}

// taskSupport is each task tool's execution.taskSupport.
var taskSupport = map[string]string{"slow_compute": "optional", "failing_job": "required", "protocol_error_job": "optional"}

// taskTTL is how long a task is kept (ms).
const taskTTL = 5 * 60 * 1000

// outcome is what a task tool ends with: a result, or a protocol error.
type outcome struct {
	result *mcp.CallToolResult
	code   int
	msg    string
}

// runTaskTool runs a task tool to its end (or ctx's).
func runTaskTool(ctx context.Context, name string, args map[string]any) outcome {
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	switch name {
	case "slow_compute":
		secs, _ := args["seconds"].(float64)
		label, _ := args["label"].(string)
		if !wait(time.Duration(secs * float64(time.Second))) {
			return outcome{}
		}
		return outcome{result: text(fmt.Sprintf("Computed %s after %gs", label, secs))}
	case "failing_job":
		if !wait(time.Second) {
			return outcome{}
		}
		r := text("failing_job failed, as it always does")
		r.IsError = true
		return outcome{result: r}
	default: // protocol_error_job
		if !wait(100 * time.Millisecond) {
			return outcome{}
		}
		return outcome{code: -32603, msg: "protocol_error_job: internal error"}
	}
}

// taskTools are the task tools as the SDK lists them (and runs them when
// called without a task).
func taskTools() []tool {
	handler := func(name string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			o := runTaskTool(ctx, name, args)
			if o.result == nil {
				return nil, fmt.Errorf("%s", o.msg)
			}
			return o.result, nil
		}
	}
	return []tool{
		{&mcp.Tool{Name: "greet", Description: "Greets by name (no tasks)", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args struct{ Name string }
				_ = json.Unmarshal(req.Params.Arguments, &args)
				return text("Hello, " + args.Name + "!"), nil
			}},
		{&mcp.Tool{Name: "slow_compute", Description: "Sleeps `seconds`, then answers (tasks: optional)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`)}, handler("slow_compute")},
		{&mcp.Tool{Name: "failing_job", Description: "A tool error after about a second (tasks: required)", InputSchema: noArgs}, handler("failing_job")},
		{&mcp.Tool{Name: "protocol_error_job", Description: "A protocol error (tasks: optional)", InputSchema: noArgs}, handler("protocol_error_job")},
	}
}

// task is one task the fixture runs.
type task struct {
	id, created string
	mu          sync.Mutex
	status      string
	updated     string
	out         outcome
	done        chan struct{}
	cancel      context.CancelFunc
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func (t *task) wire() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return map[string]any{"taskId": t.id, "status": t.status, "createdAt": t.created, "lastUpdatedAt": t.updated, "ttl": taskTTL, "pollInterval": 200}
}

// finish sets a terminal status once.
func (t *task) finish(status string, o outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status != "working" {
		return
	}
	t.status, t.updated, t.out = status, now(), o
	close(t.done)
}

// tasks serves the fixture's tasks in front of next.
type tasks struct {
	mu   sync.Mutex
	byID map[string]*task
	next http.Handler
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments map[string]any  `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		TaskID    string          `json:"taskId"`
	} `json:"params"`
}

func (ts *tasks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		ts.next.ServeHTTP(w, r)
		return
	}
	body, err := readAll(r)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.Body = readCloser{bytes.NewReader(body)}
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		ts.next.ServeHTTP(w, r)
		return
	}
	switch {
	case req.Method == "tools/call" && len(req.Params.Task) > 0 && taskSupport[req.Params.Name] != "":
		ts.answer(w, req.ID, map[string]any{"task": ts.start(req.Params.Name, req.Params.Arguments).wire()}, nil)
	case req.Method == "tasks/get" || req.Method == "tasks/result" || req.Method == "tasks/cancel":
		ts.mu.Lock()
		t := ts.byID[req.Params.TaskID]
		ts.mu.Unlock()
		if t == nil {
			ts.answer(w, req.ID, nil, map[string]any{"code": -32602, "message": "task not found"})
			return
		}
		switch req.Method {
		case "tasks/get":
			ts.answer(w, req.ID, t.wire(), nil)
		case "tasks/cancel":
			t.mu.Lock()
			terminal := t.status != "working"
			t.mu.Unlock()
			if terminal {
				ts.answer(w, req.ID, nil, map[string]any{"code": -32602, "message": "task is already terminal"})
				return
			}
			t.cancel()
			t.finish("cancelled", outcome{})
			ts.answer(w, req.ID, t.wire(), nil)
		default: // tasks/result
			select {
			case <-t.done:
			case <-r.Context().Done():
				return
			}
			t.mu.Lock()
			o, status := t.out, t.status
			t.mu.Unlock()
			switch {
			case status == "cancelled":
				ts.answer(w, req.ID, nil, map[string]any{"code": -32603, "message": "task cancelled"})
			case o.result != nil:
				ts.answer(w, req.ID, o.result, nil)
			default:
				ts.answer(w, req.ID, nil, map[string]any{"code": o.code, "message": o.msg})
			}
		}
	case req.Method == "tools/list":
		ts.listWithExecution(w, r)
	default:
		ts.next.ServeHTTP(w, r)
	}
}

// start runs a task tool in the background.
func (ts *tasks) start(name string, args map[string]any) *task {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(taskTTL)*time.Millisecond)
	t := &task{id: hex.EncodeToString(b[:]), created: now(), status: "working", done: make(chan struct{}), cancel: cancel}
	t.updated = t.created
	ts.mu.Lock()
	ts.byID[t.id] = t
	ts.mu.Unlock()
	go func() {
		defer cancel()
		o := runTaskTool(ctx, name, args)
		switch {
		case ctx.Err() != nil:
			t.finish("cancelled", outcome{})
		case o.result != nil && o.result.IsError:
			t.finish("failed", o) // SEP-1686: a tool's isError result fails the task
		case o.result != nil:
			t.finish("completed", o)
		default:
			t.finish("failed", o)
		}
	}()
	return t
}

// answer writes one JSON-RPC response as JSON.
func (ts *tasks) answer(w http.ResponseWriter, id json.RawMessage, result any, rpcErr map[string]any) {
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		resp["error"] = rpcErr
	} else {
		resp["result"] = result
	}
	data, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// listWithExecution has the SDK answer tools/list and adds each task
// tool's execution.taskSupport to the answer (JSON or one SSE event).
func (ts *tasks) listWithExecution(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	ts.next.ServeHTTP(rec, r)
	out := rec.buf.Bytes()
	prefix, data, suffix := []byte(nil), out, []byte(nil)
	if i := bytes.Index(out, []byte("data: ")); i >= 0 {
		if j := bytes.IndexByte(out[i:], '\n'); j >= 0 {
			prefix, data, suffix = out[:i+6], out[i+6:i+j], out[i+j:]
		}
	}
	var resp map[string]json.RawMessage
	var res map[string]any
	if json.Unmarshal(data, &resp) == nil && json.Unmarshal(resp["result"], &res) == nil {
		if list, ok := res["tools"].([]any); ok {
			for _, t := range list {
				if tm, ok := t.(map[string]any); ok {
					if s := taskSupport[fmt.Sprint(tm["name"])]; s != "" {
						tm["execution"] = map[string]any{"taskSupport": s}
					}
				}
			}
			if raw, err := json.Marshal(res); err == nil {
				resp["result"] = raw
				if d, err := json.Marshal(resp); err == nil {
					out = append(append(append([]byte{}, prefix...), d...), suffix...)
				}
			}
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(rec.status)
	_, _ = w.Write(out)
}

type recorder struct {
	header http.Header
	status int
	buf    bytes.Buffer
	wrote  bool
}

func (c *recorder) Header() http.Header { return c.header }
func (c *recorder) WriteHeader(s int) {
	if !c.wrote {
		c.status, c.wrote = s, true
	}
}
func (c *recorder) Write(b []byte) (int, error) { c.wrote = true; return c.buf.Write(b) }
func (c *recorder) Flush()                      {}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(http.MaxBytesReader(nil, r.Body, 4<<20))
	return b.Bytes(), err
}
