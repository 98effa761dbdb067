package backend

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Tasks of an upstream that speaks MCP 2026-07-28's tasks extension
// (mcpupstream/taskext.go): the call runs as any 2026-07-28 call does
// (Invoke: its rounds of input relayed), declaring the extension, and a
// round the upstream answers with a task fills the call's task slot.

// extTaskCreated is the call's answer when the upstream answered with the
// task t: the slot says so, the result is empty (the face answers with
// the task).
func (m *MCPUpstream) extTaskCreated(slot *pipeline.TaskSlot, t *mcpupstream.Task) (pipeline.Result, error) {
	ttl := int64(0)
	if t.TTL != nil {
		ttl = max(*t.TTL, 0)
	}
	slot.Created = &pipeline.CreatedTask{ID: t.ID, Dialect: mcpupstream.DialectTasksExtension, Status: t.Status,
		StatusMessage: t.StatusMessage, TTLMs: ttl, PollInterval: t.PollInterval, CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt}
	enc, err := proto.Marshal(&gatewayv1.InvokeResponse{})
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Encoded: enc}, nil
}

// ExtTaskRequest sends the extension's method (tasks/get, tasks/update
// with inputResponses, tasks/cancel) for the upstream's task taskID under
// the guards TaskRequest keeps, and returns its result as sent. An
// upstream that does not speak the extension (now) is
// ErrTasksUnsupported.
func (m *MCPUpstream) ExtTaskRequest(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, method, taskID string, inputResponses json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	err := m.withCaller(ctx, up, ts, func(ctx context.Context, c *mcpupstream.Caller) error {
		var err error
		out, err = c.ExtTaskRequest(ctx, method, taskID, inputResponses)
		return err
	})
	return out, err
}

// ExtTaskGet is the extension's tasks/get for the upstream's task taskID:
// the task, and its result (when it has one) as Invoke answers a call's
// (an encoded InvokeResponse), so the face's size guard and result
// mapping see it as they see any call's. The task's requests for input
// are checked as a round's are (checkExtTaskInput: a *pipeline.Error
// when they cannot be relayed). Errors are ExtTaskRequest's, and a
// malformed answer's (naming the upstream: for the log).
func (m *MCPUpstream) ExtTaskGet(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, tool, taskID string) (*mcpupstream.DetailedTask, *pipeline.Result, error) {
	raw, err := m.ExtTaskRequest(ctx, up, ts, "tasks/get", taskID, nil)
	if err != nil {
		return nil, nil, err
	}
	d, err := mcpupstream.DecodeDetailedTask(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: tasks/get: %w", up.URL, err)
	}
	if d.InputRequests != nil {
		if err := m.checkExtTaskInput(up, tool, d.InputRequests); err != nil {
			return nil, nil, err
		}
	}
	if d.Result == nil {
		return d, nil, nil
	}
	res, err := mcpupstream.DecodeCallToolResult(d.Result)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: tasks/get: the task's result does not decode: %w", up.URL, err)
	}
	if res.InputRequests != nil {
		return nil, nil, fmt.Errorf("upstream %s: tasks/get: the task's result asks for input", up.URL)
	}
	enc, err := mcpInvokeResponse(res)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: tasks/get: the task's result does not convert: %w", up.URL, err)
	}
	return d, &pipeline.Result{Encoded: enc}, nil
}

// maxInputKeyBytes bounds a key of an upstream's inputRequests.
const maxInputKeyBytes = 256

// checkExtTaskInput holds a task's requests for input (an InputRequestMap
// as sent) to what a round's may be (inputRequired): known kinds, within
// the bounds, none the policy forbids for up (a *pipeline.Error); a
// malformed map is the upstream's error.
func (m *MCPUpstream) checkExtTaskInput(up *registry.MCPTool, tool string, raw json.RawMessage) error {
	c := &pipeline.Call{Tool: tool}
	var irm mcp.InputRequestMap
	if err := json.Unmarshal(raw, &irm); err != nil {
		return fmt.Errorf("upstream %s: tasks/get: the task's inputRequests do not decode: %w", up.URL, err)
	}
	kinds, err := inputKinds(irm)
	if err != nil {
		return fmt.Errorf("upstream %s: tasks/get: %w", up.URL, err)
	}
	if len(irm) == 0 || len(irm) > pipeline.InputMaxRequests || len(raw) > pipeline.InputMaxRequestBytes {
		return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonInputTooLarge, Tool: tool,
			Message: fmt.Sprintf("tool %q: its task asked for more input than the gateway relays (1 to %d requests, %d bytes)",
				tool, pipeline.InputMaxRequests, pipeline.InputMaxRequestBytes)}
	}
	for k := range irm {
		if k == "" || len(k) > maxInputKeyBytes {
			return fmt.Errorf("upstream %s: tasks/get: an inputRequests key is empty or over %d bytes", up.URL, maxInputKeyBytes)
		}
	}
	if pe := m.inputForbidden(toolTarget(c, up), kinds); pe != nil {
		return pe
	}
	return nil
}
