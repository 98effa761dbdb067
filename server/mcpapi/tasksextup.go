package mcpapi

// Tasks of an upstream that speaks MCP 2026-07-28's tasks extension
// itself (mcpupstream/taskext.go), served to a caller of the extension:
// unlike a 2025-11-25 upstream's (tasksext.go bridges those), nothing is
// translated but the task's id — the caller's tasks/get, tasks/update and
// tasks/cancel become the upstream's own, for the upstream's id recorded
// with the task (mcptasks.Record, Dialect "ext"), under the same
// ownership and store. The upstream's answer is checked and rewritten, not
// passed on: the gateway's id and lifetime, the outcome held to the tool's
// max_result_bytes, the upstream's error words withheld, its requests for
// input held to a round's bounds, the policy and the caller's declared
// capabilities (a task whose requests cannot be relayed is cancelled
// upstream and answered failed, saying why: nothing else could answer it).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// extTaskOnly answers a 2025-11-25 request for a task of the extension.
func extTaskOnly(tr *taskRequest) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"%s: task %q runs on MCP 2026-07-28's tasks extension; reach it with that revision's tasks/get", tr.method, policy.Bound(tr.taskID))}
}

// answerExtUpstream is a 2026-07-28 task request's answer for a task of an
// upstream of the extension.
func (m *Server) answerExtUpstream(ctx context.Context, tr *taskRequest, rec mcptasks.Record, e *registry.Entry) (json.RawMessage, error) {
	up, ts := e.Tool.Spec.MCPTool, e.Tool.Spec.TLS
	ctx = withoutSDKValues(ctx)
	ack := func() (json.RawMessage, error) {
		return json.Marshal(m.withServerInfo(map[string]any{"resultType": resultTypeFor(tr.ext.rev)}))
	}
	switch tr.method {
	case "tasks/update":
		responses, err := checkInputResponses(tr.ext.responses)
		if err != nil {
			return nil, err
		}
		if _, err := m.taskUps.ExtTaskRequest(ctx, up, ts, "tasks/update", rec.UpstreamID, responses); err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		return ack()
	case "tasks/cancel":
		if _, err := m.taskUps.ExtTaskRequest(ctx, up, ts, "tasks/cancel", rec.UpstreamID, nil); err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		return ack()
	}
	// tasks/get
	dt, res, err := m.taskUps.ExtTaskGet(ctx, up, ts, rec.Tool, rec.UpstreamID)
	var pe *pipeline.Error
	if errors.As(err, &pe) {
		return m.failExtTaskInput(ctx, tr, rec, e, pe.Message, nil)
	}
	if err != nil {
		return nil, m.taskUpstreamError(ctx, tr, err)
	}
	d := m.withServerInfo(extTask(tr.taskID, &dt.Task, rec))
	d["resultType"] = resultTypeFor(tr.ext.rev)
	switch {
	case res != nil && (dt.Status == mcpupstream.TaskCompleted || dt.Status == mcpupstream.TaskFailed):
		if err := inlineTaskResult(d, e, *res, tr.ext.rev); err != nil {
			return nil, err
		}
	case dt.Status == mcpupstream.TaskFailed:
		// Its own words may quote anything: its code only.
		code := int64(jsonrpc.CodeInternalError)
		if dt.Error != nil {
			code = dt.Error.Code
		}
		d["error"] = map[string]any{"code": code, "message": fmt.Sprintf("tool %q: the upstream's task failed", policy.Bound(rec.Tool))}
	case dt.Status == mcpupstream.TaskInputRequired && dt.InputRequests != nil:
		reqs, missing, err := relatedInputRequests(dt.InputRequests, tr.taskID, tr.ext.can)
		if err != nil {
			return nil, m.taskUpstreamError(ctx, tr, fmt.Errorf("upstream %s: tasks/get: %w", up.URL, err))
		}
		if len(missing) > 0 {
			return m.failExtTaskInput(ctx, tr, rec, e, fmt.Sprintf(
				"tool %q: its task asked its caller for %s, which the caller did not declare it can answer", policy.Bound(rec.Tool), missing[0]), missing)
		}
		d["inputRequests"] = reqs
	case dt.Status == mcpupstream.TaskCompleted:
		// Completed without a result: malformed.
		return nil, m.taskUpstreamError(ctx, tr, fmt.Errorf("upstream %s: tasks/get: a completed task without a result", up.URL))
	}
	return json.Marshal(d)
}

// failExtTaskInput ends a task whose requests for input cannot be relayed
// (the policy, the bounds, the caller's capabilities): cancelled upstream
// (best effort), answered failed with why; missing are capabilities the
// caller did not declare (-32021), else the gateway refused (-32600).
func (m *Server) failExtTaskInput(ctx context.Context, tr *taskRequest, rec mcptasks.Record, e *registry.Entry, why string, missing []string) (json.RawMessage, error) {
	if _, err := m.taskUps.ExtTaskRequest(ctx, e.Tool.Spec.MCPTool, e.Tool.Spec.TLS, "tasks/cancel", rec.UpstreamID, nil); err != nil {
		m.log.WarnContext(ctx, "MCP tasks: a task whose input could not be relayed was not cancelled upstream", "tool", rec.Tool, "error", err)
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if len(missing) > 0 {
		code = -32021 // SEP-2575's Missing Required Client Capability
	}
	d := m.withServerInfo(map[string]any{"taskId": tr.taskID, "status": mcpupstream.TaskFailed, "ttlMs": extTTL(rec),
		"createdAt": rec.CreatedAt, "lastUpdatedAt": rec.CreatedAt, "statusMessage": why,
		"error": map[string]any{"code": code, "message": why}})
	d["resultType"] = resultTypeFor(tr.ext.rev)
	return json.Marshal(d)
}

// relatedInputRequests is an upstream task's inputRequests (checked by its
// backend: kinds, bounds, policy) as its caller is shown them: each
// request's related-task _meta naming the gateway's task id, never the
// upstream's; missing are the kinds asked that can does not hold.
func relatedInputRequests(raw json.RawMessage, taskID string, can map[string]bool) (map[string]any, []string, error) {
	var in map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, nil, fmt.Errorf("the task's inputRequests do not decode: %v", err)
	}
	out := make(map[string]any, len(in))
	var missing []string
	for k, r := range in {
		kind := pipeline.InputKindOf(r.Method)
		if kind == "" {
			return nil, nil, fmt.Errorf("the task asks for input by %q", policy.Bound(r.Method))
		}
		if !can[kind] {
			missing = append(missing, kind)
			continue
		}
		p, err := relatedToTask(r.Params, taskID)
		if err != nil {
			return nil, nil, err
		}
		out[k] = map[string]any{"method": r.Method, "params": json.RawMessage(p)}
	}
	return out, missing, nil
}

// checkInputResponses is tasks/update's inputResponses, held to a round's
// bound: an object of objects.
func checkInputResponses(raw json.RawMessage) (json.RawMessage, error) {
	invalid := func(format string, a ...any) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update: " + fmt.Sprintf(format, a...)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, invalid("inputResponses must be an object")
	}
	if len(raw) > pipeline.InputMaxResponseBytes {
		return nil, invalid("inputResponses are %d bytes, over the gateway's bound of %d", len(raw), pipeline.InputMaxResponseBytes)
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &answers); err != nil {
		return nil, invalid("inputResponses must be an object")
	}
	for k, a := range answers {
		if t := bytes.TrimSpace(a); len(t) == 0 || t[0] != '{' {
			return nil, invalid("inputResponses[%q] must be an object", policy.Bound(k))
		}
	}
	return raw, nil
}
