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
// protocol error), confirm_delete (required: one elicitation) and
// multi_input (required: two elicitations at once). A task that needs
// input asks as a 2025-11-25 server does: it turns input_required and its
// elicitation/create requests (related-task _meta naming it) go out on the
// response stream of the next tasks/result, each once; the answer is a
// JSON-RPC response POSTed on any request, taken by its id. Every other
// request reaches the SDK as before.

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
var TaskRequiredTools = []string{"failing_job", "confirm_delete", "multi_input"}

// taskSupport is each task tool's execution.taskSupport.
var taskSupport = map[string]string{"slow_compute": "optional", "failing_job": "required", "protocol_error_job": "optional",
	"confirm_delete": "required", "multi_input": "required"}

// taskTTL is how long a task is kept (ms).
const taskTTL = 5 * 60 * 1000

// outcome is what a task tool ends with: a result, or a protocol error.
type outcome struct {
	result *mcp.CallToolResult
	code   int
	msg    string
}

// askFunc asks the task's client for input (method, params) and waits for
// its answer (a JSON-RPC response).
type askFunc func(ctx context.Context, method string, params map[string]any) (*answer, error)

// answer is a client's JSON-RPC response to a request of the fixture's.
type answer struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// runTaskTool runs a task tool to its end (or ctx's), asking for input
// through ask.
func runTaskTool(ctx context.Context, name string, args map[string]any, ask askFunc) outcome {
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
	case "confirm_delete":
		filename, _ := args["filename"].(string)
		a, err := ask(ctx, "elicitation/create", map[string]any{"message": "Delete " + filename + "?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}, "required": []any{"confirm"}}})
		if err != nil {
			return outcome{code: -32603, msg: "confirm_delete: " + err.Error()}
		}
		if c := accepted(a); c != nil && c["confirm"] == true {
			return outcome{result: text("Deleted " + filename)}
		}
		return outcome{result: text("Kept " + filename)}
	case "multi_input":
		// Both asked at once: two requests await answers together.
		fields := []string{"name", "confirm"}
		got := make([]map[string]any, len(fields))
		errs := make([]error, len(fields))
		var wg sync.WaitGroup
		for i, f := range fields {
			wg.Go(func() {
				a, err := ask(ctx, "elicitation/create", map[string]any{"message": "Your " + f + "?",
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{f: map[string]any{"type": "string"}}}})
				got[i], errs[i] = accepted(a), err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return outcome{code: -32603, msg: "multi_input: " + err.Error()}
			}
		}
		return outcome{result: text(fmt.Sprintf("Answered %v and %v", got[0], got[1]))}
	case "test_tool_with_task":
		return withTaskOutcome(ctx, args) // tasksext.go
	default: // protocol_error_job
		if !wait(100 * time.Millisecond) {
			return outcome{}
		}
		return outcome{code: -32603, msg: "protocol_error_job: internal error"}
	}
}

// accepted is an elicitation answer's content when it was accepted.
func accepted(a *answer) map[string]any {
	if a == nil {
		return nil
	}
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(a.Result, &r) != nil || r.Action != "accept" {
		return nil
	}
	return r.Content
}

// taskTools are the task tools as the SDK lists them (and runs them when
// called without a task).
func taskTools() []tool {
	handler := func(name string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			o := runTaskTool(ctx, name, args, func(context.Context, string, map[string]any) (*answer, error) {
				return nil, fmt.Errorf("%s runs only as a task", name)
			})
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
		{&mcp.Tool{Name: "confirm_delete", Description: "Asks to confirm deleting `filename` (tasks: required)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)}, handler("confirm_delete")},
		{&mcp.Tool{Name: "multi_input", Description: "Asks two questions at once (tasks: required)", InputSchema: noArgs}, handler("multi_input")},
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
	// queue are requests for input not yet sent on a tasks/result stream;
	// asking how many await answers; changed is closed (and replaced) on
	// each change.
	queue   [][]byte
	asking  int
	changed chan struct{}
}

// changedLocked wakes the streams waiting on t.
func (t *task) changedLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// terminal reports whether status ends a task.
func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
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
	if terminal(t.status) {
		return
	}
	t.status, t.updated, t.out = status, now(), o
	close(t.done)
	t.changedLocked()
}

// tasks serves the fixture's tasks in front of next.
type tasks struct {
	mu   sync.Mutex
	byID map[string]*task
	// waiting are the requests for input awaiting answers, by id.
	waiting map[string]chan *answer
	next    http.Handler
	// ext: 2026-07-28's tasks extension is served too (tasksext.go).
	ext bool
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
	if ts.ext && ts.serveExt(w, body, &req) {
		return
	}
	if req.Method == "" {
		// A response: an answer to a task's request for input, by its id.
		var a answer
		_ = json.Unmarshal(body, &a)
		ts.mu.Lock()
		ch := ts.waiting[a.ID]
		delete(ts.waiting, a.ID)
		ts.mu.Unlock()
		if ch == nil {
			ts.next.ServeHTTP(w, r)
			return
		}
		ch <- &a
		w.WriteHeader(http.StatusAccepted)
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
			done := terminal(t.status)
			t.mu.Unlock()
			if done {
				ts.answer(w, req.ID, nil, map[string]any{"code": -32602, "message": "task is already terminal"})
				return
			}
			t.cancel()
			t.finish("cancelled", outcome{})
			ts.answer(w, req.ID, t.wire(), nil)
		default: // tasks/result
			ts.result(w, r, req.ID, t)
		}
	case req.Method == "tools/list":
		ts.listWithExecution(w, r)
	default:
		ts.next.ServeHTTP(w, r)
	}
}

// result answers tasks/result for t on a stream: the task's requests for
// input as they come (each sent once), then its outcome.
func (ts *tasks) result(w http.ResponseWriter, r *http.Request, id json.RawMessage, t *task) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(msg []byte) {
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
		_ = http.NewResponseController(w).Flush()
	}
	for {
		t.mu.Lock()
		queue, changed, status, o := t.queue, t.changed, t.status, t.out
		t.queue = nil
		t.mu.Unlock()
		for _, msg := range queue {
			send(msg)
		}
		if terminal(status) {
			resp := map[string]any{"jsonrpc": "2.0", "id": id}
			switch {
			case status == "cancelled":
				resp["error"] = map[string]any{"code": -32603, "message": "task cancelled"}
			case o.result != nil:
				resp["result"] = o.result
			default:
				resp["error"] = map[string]any{"code": o.code, "message": o.msg}
			}
			data, _ := json.Marshal(resp)
			send(data)
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// ask is a task's askFunc: the request goes out on a tasks/result stream,
// the task is input_required until every request it made is answered.
func (ts *tasks) ask(t *task) askFunc {
	return func(ctx context.Context, method string, params map[string]any) (*answer, error) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := "fx-input-" + hex.EncodeToString(b[:])
		params["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.id}}
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			return nil, err
		}
		ch := make(chan *answer, 1)
		ts.mu.Lock()
		ts.waiting[id] = ch
		ts.mu.Unlock()
		t.mu.Lock()
		t.status, t.updated = "input_required", now()
		t.queue = append(t.queue, msg)
		t.asking++
		t.changedLocked()
		t.mu.Unlock()
		var a *answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		ts.mu.Lock()
		delete(ts.waiting, id)
		ts.mu.Unlock()
		t.mu.Lock()
		if t.asking--; t.asking == 0 && t.status == "input_required" {
			t.status, t.updated = "working", now()
			t.changedLocked()
		}
		t.mu.Unlock()
		if a != nil && len(a.Error) > 0 {
			return nil, fmt.Errorf("the client answered an error: %s", a.Error)
		}
		return a, err
	}
}

// start runs a task tool in the background.
func (ts *tasks) start(name string, args map[string]any) *task {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(taskTTL)*time.Millisecond)
	t := &task{id: hex.EncodeToString(b[:]), created: now(), status: "working", done: make(chan struct{}), cancel: cancel, changed: make(chan struct{})}
	t.updated = t.created
	ts.mu.Lock()
	ts.byID[t.id] = t
	ts.mu.Unlock()
	go func() {
		defer cancel()
		o := runTaskTool(ctx, name, args, ts.ask(t))
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
