package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (MCP 2025-11-25, SEP-1686): a task-augmented tools/call answers at
// once with a task the upstream runs on; tasks/get, tasks/result and
// tasks/cancel reach it later by its id. An upstream keeps a task in the
// session that created it (the TypeScript SDK's task store does), so a
// task is reached again through that session's id, from any replica of
// the gateway: the session id is what Task carries beside the task.

// ErrTasksUnsupported: the session cannot carry task requests (it runs
// through the SDK's client, which knows no tasks).
var ErrTasksUnsupported = errors.New("this upstream session cannot carry task requests")

// Task is an upstream's task, as it described it (tasks/get's fields).
type Task struct {
	ID     string `json:"taskId"`
	Status string `json:"status"`
	// TTL is how long the upstream keeps the task, in ms (nil: no limit).
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

// Task statuses.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// ValidTaskStatus reports whether s is a status MCP defines.
func ValidTaskStatus(s string) bool {
	switch s {
	case TaskWorking, TaskInputRequired, TaskCompleted, TaskFailed, TaskCancelled:
		return true
	}
	return false
}

// DecodeTask is the task a tasks/get or tasks/cancel answer (or a
// CreateTaskResult's task) describes, checked: an id, a known status.
func DecodeTask(data []byte) (*Task, error) {
	var t Task
	if err := unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("the upstream's task does not decode: %v", err)
	}
	if t.ID == "" || len(t.ID) > maxTaskIDBytes || !ValidTaskStatus(t.Status) {
		return nil, errors.New("the upstream's task has no id, an over-long one, or an unknown status")
	}
	return &t, nil
}

// maxTaskIDBytes bounds an upstream's task id the gateway keeps.
const maxTaskIDBytes = 256

// CallToolTask calls the upstream tool name with args as a task (params
// task: {ttl}, ttlMs 0: none asked) and returns the task the upstream made
// and the id of the session it lives in. Errors are CallTool's.
func (c *Caller) CallToolTask(ctx context.Context, name string, args json.RawMessage, ttlMs int64) (*Task, string, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if c.sdk {
		if !c.sideTasks() {
			return nil, "", ErrTasksUnsupported
		}
		task := map[string]any{}
		if ttlMs > 0 {
			task["ttl"] = ttlMs
		}
		res, err := c.sideRequest(ctx, "tools/call", map[string]any{"name": name, "arguments": args, "task": task})
		if err != nil {
			return nil, "", err
		}
		t, err := decodeCreatedTask(res)
		return t, c.sessionKey(), err
	}
	body := getBuffer()
	defer putBuffer(body)
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	if err := c.writeRequest(body, id, name, args, false, nil); err != nil {
		return nil, "", err
	}
	// writeRequest's params object ends the body ("}}"): the task goes in it.
	body.Truncate(body.Len() - 2)
	if ttlMs > 0 {
		fmt.Fprintf(body, `,"task":{"ttl":%d}}}`, ttlMs)
	} else {
		body.WriteString(`,"task":{}}}`)
	}
	sid := c.Session.ID()
	ans, err := c.exchange(ctx, id, "tools/call", name, sid, body.Bytes(), nil)
	if err != nil {
		return nil, "", err
	}
	t, err := decodeCreatedTask(ans.Result)
	if err != nil {
		return nil, "", err
	}
	return t, sid, nil
}

// decodeCreatedTask is the task of a task-augmented tools/call's answer
// (CreateTaskResult), checked.
func decodeCreatedTask(result json.RawMessage) (*Task, error) {
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if err := unmarshal(result, &created); err != nil || len(created.Task) == 0 {
		return nil, errors.New("the upstream answered a task-augmented tools/call without a task")
	}
	return DecodeTask(created.Task)
}

// TaskRequest sends method (tasks/get, tasks/result, tasks/cancel) for the
// upstream's task taskID on the upstream session sid, and returns the
// answer's result as sent: the caller decodes it.
func (c *Caller) TaskRequest(ctx context.Context, sid, method, taskID string) (json.RawMessage, error) {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel":
	default:
		return nil, fmt.Errorf("%q is not a task request", method)
	}
	if c.sdk {
		if !c.sideTasks() {
			return nil, ErrTasksUnsupported
		}
		if sid != c.sessionKey() {
			// The connection the task was made on has ended (the process
			// with it): so has the task.
			return nil, fmt.Errorf("%s: the task's session has ended: %w", method, mcp.ErrSessionMissing)
		}
		if method == "tasks/result" {
			// The task's requests for input come while its tasks/result is
			// in flight (the upstream holds them for it): asked through
			// ctx's InputFunc, as a call's are (attribution.go).
			var finish func()
			ctx, finish = withAsker(ctx)
			defer finish()
		}
		return c.sideRequest(ctx, method, map[string]string{"taskId": taskID})
	}
	qid, err := json.Marshal(taskID)
	if err != nil {
		return nil, err
	}
	id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
	body := getBuffer()
	defer putBuffer(body)
	body.WriteString(`{"jsonrpc":"2.0","id":"`)
	body.WriteString(id)
	body.WriteString(`","method":"`)
	body.WriteString(method)
	body.WriteString(`","params":{`)
	if c.meta != nil {
		body.WriteString(`"_meta":`)
		body.Write(c.meta)
		body.WriteByte(',')
	}
	body.WriteString(`"taskId":`)
	body.Write(qid)
	body.WriteString(`}}`)
	ans, err := c.exchange(ctx, id, method, "", sid, body.Bytes(), nil)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(ans.Result), nil
}

// DecodeCallToolResult decodes a CallToolResult as the SDK does (a task's
// result, read by TaskRequest).
func DecodeCallToolResult(data []byte) (*mcp.CallToolResult, error) {
	return decodeCallToolResult(data)
}

// maxToolListPages bounds the pages ToolTaskSupport reads.
const maxToolListPages = 100

// ToolTaskSupport is the upstream's tools that take tasks, by upstream
// name: "optional" or "required" (execution.taskSupport; a tool that says
// nothing, or "forbidden", is left out). The SDK's client drops a tool's
// execution, so the listing is read here (tools/list, every page; over
// legacy SSE beside the SDK, side.go). A session that carries no task
// requests (CarriesTasks) answers what its upstream declares with
// ErrTasksUnsupported.
func (c *Caller) ToolTaskSupport(ctx context.Context) (map[string]string, error) {
	if c.sdk && c.side == nil {
		return nil, ErrTasksUnsupported
	}
	out := map[string]string{}
	cursor := ""
	for range maxToolListPages {
		params := map[string]any{}
		if c.meta != nil {
			params["_meta"] = c.meta
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var result json.RawMessage
		if c.sdk {
			// Beside the SDK on the session's one connection (side.go).
			r, err := c.sideRequest(ctx, "tools/list", params)
			if err != nil {
				return nil, err
			}
			result = r
		} else {
			id := "flowdrop-" + strconv.FormatUint(c.ids.Add(1), 10)
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
			if err != nil {
				return nil, err
			}
			ans, err := c.exchange(ctx, id, "tools/list", "", c.Session.ID(), body, nil)
			if err != nil {
				return nil, err
			}
			result = ans.Result
		}
		var page struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution *struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := unmarshal(result, &page); err != nil {
			return nil, fmt.Errorf("the upstream's tools/list does not decode: %v", err)
		}
		for _, t := range page.Tools {
			if t.Execution == nil {
				continue
			}
			switch ts := t.Execution.TaskSupport; ts {
			case "optional", "required":
				out[t.Name] = ts
			}
		}
		if page.NextCursor == "" {
			if !c.CarriesTasks() {
				return out, ErrTasksUnsupported
			}
			return out, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("the upstream's tools/list has over %d pages", maxToolListPages)
}
