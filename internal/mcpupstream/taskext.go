package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks of MCP 2026-07-28 (SEP-2663, the `io.modelcontextprotocol/tasks`
// extension) asked of an upstream that declared the extension: a
// tools/call declaring the extension in its per-request client
// capabilities may be answered with a task (resultType "task", the task's
// members flat in the result) — on any round of a multi round-trip call,
// the last one included; the task is then reached by its id with the
// extension's tasks/get (the outcome inline once done, the task's requests
// for input while input_required), tasks/update (the answers) and
// tasks/cancel, each naming the task in its Mcp-Name header. Nothing of
// it lives in a session: a task is reached from any replica by its id.

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Dialects a task was made in, recorded with it.
const (
	// DialectTasks2025 is 2025-11-25's task-augmented tools/call (params
	// task) and tasks/get, tasks/result, tasks/cancel in its session.
	DialectTasks2025 = ""
	// DialectTasksExtension is 2026-07-28's tasks extension.
	DialectTasksExtension = "ext"
)

// TasksExtension reports whether the upstream speaks 2026-07-28's tasks
// extension: it negotiated 2026-07-28 (or later) and declared the
// extension in its capabilities. Such an upstream is asked for tasks only
// that way.
func (c *Caller) TasksExtension() bool {
	if c.sdk || c.revision() < revisionRequestMeta {
		return false
	}
	r := c.Session.InitializeResult()
	if r == nil || r.Capabilities == nil {
		return false
	}
	v, ok := r.Capabilities.Extensions[TasksExtension]
	return ok && v != nil
}

// extMeta is the per-request _meta with the tasks extension declared
// beside what meta declares (a request of the extension's).
func extMeta(meta json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, err
		}
	}
	caps := map[string]json.RawMessage{}
	if raw, ok := m[mcp.MetaKeyClientCapabilities]; ok {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, err
		}
	}
	caps["extensions"] = json.RawMessage(`{"` + TasksExtension + `":{}}`)
	raw, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	m[mcp.MetaKeyClientCapabilities] = raw
	return json.Marshal(m)
}

// CallToolRoundTask is CallToolRound declaring the tasks extension: the
// upstream may answer with a task (returned, the result nil) instead of a
// result or a round's InputRequiredResult. Only for an upstream whose
// TasksExtension is true.
func (c *Caller) CallToolRoundTask(ctx context.Context, name string, args json.RawMessage, onProgress func(Progress), retry *Retry) (*mcp.CallToolResult, *Task, error) {
	if !c.TasksExtension() {
		return nil, nil, ErrTasksUnsupported
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	meta, err := extMeta(c.metaFor(ctx))
	if err != nil {
		return nil, nil, err
	}
	body := getBuffer()
	defer putBuffer(body)
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	if err := c.writeRequestMeta(body, id, name, args, onProgress != nil, retry, meta); err != nil {
		return nil, nil, err
	}
	ans, err := c.exchange(ctx, id, "tools/call", name, c.Session.ID(), body.Bytes(), onProgress)
	if err != nil {
		return nil, nil, err
	}
	var kind struct {
		ResultType string `json:"resultType"`
	}
	if err := unmarshal(ans.Result, &kind); err != nil {
		return nil, nil, fmt.Errorf("the upstream's tools/call answer does not decode: %v", err)
	}
	if kind.ResultType != "task" {
		res, err := decodeCallToolResultPart(ans.Result)
		return res, nil, err
	}
	t, err := DecodeExtCreateTask(ans.Result)
	if err != nil {
		return nil, nil, err
	}
	return nil, t, nil
}

// extTaskWire is a task as the extension writes it (CreateTaskResult's
// members, and DetailedTask's).
type extTaskWire struct {
	ID             string          `json:"taskId"`
	Status         string          `json:"status"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	RequestState   *string         `json:"requestState"`
	InputRequests  json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage `json:"result"`
	Error          *jsonrpc.Error  `json:"error"`
}

func (w *extTaskWire) task() (*Task, error) {
	if w.ID == "" || len(w.ID) > maxTaskIDBytes || !ValidTaskStatus(w.Status) {
		return nil, errors.New("the upstream's task has no id, an over-long one, or an unknown status")
	}
	if w.TTLMs != nil && *w.TTLMs < 0 || w.PollIntervalMs < 0 {
		return nil, errors.New("the upstream's task has a negative ttlMs or pollIntervalMs")
	}
	return &Task{ID: w.ID, Status: w.Status, TTL: w.TTLMs, PollInterval: w.PollIntervalMs, StatusMessage: w.StatusMessage,
		CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt}, nil
}

// DecodeExtCreateTask is the task an extension's CreateTaskResult (a
// tools/call answered resultType "task") describes, checked: an id, a
// known status, and none of a round's members (requestState,
// inputRequests), which SEP-2663 keeps off the task envelope.
func DecodeExtCreateTask(data []byte) (*Task, error) {
	var w extTaskWire
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("the upstream's task does not decode: %v", err)
	}
	if w.RequestState != nil || len(w.InputRequests) > 0 {
		return nil, errors.New("the upstream's task carries a round's requestState or inputRequests")
	}
	return w.task()
}

// DetailedTask is an extension's tasks/get answer: the task, and as its
// status says, its outcome (Result, a CallToolResult as sent; or Error) or
// its requests for input (InputRequests, an InputRequestMap as sent).
type DetailedTask struct {
	Task
	Result        json.RawMessage
	Error         *jsonrpc.Error
	InputRequests json.RawMessage
}

// DecodeDetailedTask decodes a tasks/get answer of the extension, checked
// as DecodeExtCreateTask's task is, with at most one outcome.
func DecodeDetailedTask(data []byte) (*DetailedTask, error) {
	var w extTaskWire
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("the upstream's task does not decode: %v", err)
	}
	t, err := w.task()
	if err != nil {
		return nil, err
	}
	if len(w.Result) > 0 && string(w.Result) != "null" && w.Error != nil {
		return nil, errors.New("the upstream's task has both a result and an error")
	}
	d := &DetailedTask{Task: *t, Error: w.Error}
	if len(w.Result) > 0 && string(w.Result) != "null" {
		d.Result = json.RawMessage(w.Result)
	}
	if len(w.InputRequests) > 0 && string(w.InputRequests) != "null" {
		d.InputRequests = json.RawMessage(w.InputRequests)
	}
	return d, nil
}

// ExtTaskRequest sends the extension's method (tasks/get, tasks/update,
// tasks/cancel) for the upstream's task taskID, with inputResponses for
// tasks/update, and returns the answer's result as sent.
func (c *Caller) ExtTaskRequest(ctx context.Context, method, taskID string, inputResponses json.RawMessage) (json.RawMessage, error) {
	if !c.TasksExtension() {
		return nil, ErrTasksUnsupported
	}
	switch method {
	case "tasks/get", "tasks/cancel":
	case "tasks/update":
		if len(inputResponses) == 0 {
			return nil, errors.New("tasks/update without inputResponses")
		}
	default:
		return nil, fmt.Errorf("%q is not a request of the tasks extension", method)
	}
	meta, err := extMeta(c.meta)
	if err != nil {
		return nil, err
	}
	params := map[string]json.RawMessage{"_meta": meta}
	if params["taskId"], err = json.Marshal(taskID); err != nil {
		return nil, err
	}
	if method == "tasks/update" {
		params["inputResponses"] = inputResponses
	}
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	// The task's id is the request's Mcp-Name (SEP-2663, "Routing Headers").
	ans, err := c.exchange(ctx, id, method, taskID, c.Session.ID(), body, nil)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(ans.Result), nil
}
