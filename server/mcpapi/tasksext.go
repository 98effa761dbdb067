package mcpapi

// The tasks extension of MCP 2026-07-28 (SEP-2663,
// `io.modelcontextprotocol/tasks`), served by bridging to the upstreams'
// 2025-11-25 tasks (tasks.go keeps the records, the ownership and the
// upstream requests; this file is the extension's wire). A task of an
// upstream that speaks the extension itself is relayed, not bridged
// (tasksextup.go).
//
// What differs from 2025-11-25 (seps/2663-tasks-extension.md, and the
// conformance suite's tasks-* scenarios, which are its test oracle):
//   - the client opts in per request: the extension under
//     _meta["io.modelcontextprotocol/clientCapabilities"].extensions;
//     server/discover declares it under capabilities.extensions;
//   - the server decides whether a tools/call becomes a task: here, when
//     the caller opted in and the tool's upstream takes tasks (optional or
//     required; an HTTP upstream). The answer is flat: resultType "task"
//     and the task's members in the result (ttlMs, pollIntervalMs);
//   - tasks/get inlines the outcome: a completed task's result, a failed
//     one's error (a tool's isError result is "completed", per the SEP);
//     there is no tasks/result nor tasks/list (the SDK answers them
//     "method not found");
//   - tasks/cancel and tasks/update answer an empty {resultType:"complete"};
//   - a caller that did not opt in gets -32021 naming the extension for
//     tasks/get, tasks/update and tasks/cancel, and for a tools/call of a
//     tool that requires tasks; an optional one runs as a plain call;
//   - tasks/get, tasks/update and tasks/cancel carry Mcp-Name: <taskId>
//     (SEP-2663 "Routing Headers"), else -32020 and HTTP 400.
//
// Input requests: an upstream's 2025-11-25 task asks for input only over
// the response stream of tasks/result; the gateway reads that stream for
// the caller and shows what it read as the task's inputRequests, and
// tasks/update delivers the caller's answers (taskinput.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TasksExtension is the 2026-07-28 tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// resultTypeTask is a tools/call answered with a task (CreateTaskResult).
const resultTypeTask = "task"

// tasksExtensionDeclared: the request's per-request client capabilities
// (2026-07-28 _meta) name the tasks extension.
func tasksExtensionDeclared(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	v, ok := ext[TasksExtension]
	return ok && v != nil
}

// tasksUsable: a caller on rev, whose request carries meta, can be served
// tasks — on 2025-11-25 always (the revision's own tasks), from 2026-07-28
// when it opted in to the extension.
func tasksUsable(rev string, meta map[string]any) bool {
	return rev == RevisionTasks || rev >= RevisionResultType && tasksExtensionDeclared(meta)
}

// missingTasksExtension is -32021 naming the extension (SEP-2575's
// Missing Required Client Capability; SEP-2663 "Required Capabilities").
func missingTasksExtension(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
		RequiredCapabilities: &mcp.ClientCapabilities{Extensions: map[string]any{TasksExtension: map[string]any{}}}})
	if err != nil {
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: msg}
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: msg, Data: data}
}

// requireTasksExtension refuses a 2026-07-28 tools/call that could only be
// a task (its upstream requires them) from a caller that did not opt in;
// nil for anything else, a tool the caller cannot see included (the
// pipeline answers those as ever).
func (m *Server) requireTasksExtension(ctx context.Context, p *mcp.CallToolParamsRaw, rev string) error {
	if rev < RevisionResultType || m.tasks == nil || m.taskUps == nil || tasksExtensionDeclared(p.Meta) {
		return nil
	}
	e := m.taskEntry(ctx, p.Name)
	if e == nil || m.taskSupportNow(ctx, e) != "required" {
		return nil
	}
	return missingTasksExtension("tools/call %q: the tool runs only as a task; declare the %s extension in the request's client capabilities", policy.Bound(p.Name), TasksExtension)
}

// extRequest is what a 2026-07-28 task request adds to taskRequest.
type extRequest struct {
	// rev is the request's revision.
	rev string
	// refused: answered with this error before anything else (a header
	// that does not match the body, a caller that did not opt in).
	refused error
	// responses is tasks/update's inputResponses.
	responses json.RawMessage
	// can are the kinds of input the request's client declared it can
	// answer (its per-request client capabilities).
	can map[string]bool
}

// extTaskParams are tasks/get, tasks/update and tasks/cancel's params.
type extTaskParams struct {
	Meta           map[string]any  `json:"_meta,omitempty"`
	TaskID         *string         `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// recogniseTaskExt is recogniseTask for a 2026-07-28 request: a tools/call
// that opts in to the extension for a tool whose upstream takes tasks, or
// tasks/get, tasks/update, tasks/cancel. Anything the SDK would refuse
// (its _meta and header checks) goes to the SDK, which does.
func (m *Server) recogniseTaskExt(r *http.Request, body []byte) (*taskRequest, bool) {
	if !bytes.Contains(body, []byte("tasks")) {
		return nil, false
	}
	w, id, method, ok := decodeTaskEnvelope(r, body)
	if !ok {
		return nil, false
	}
	switch method {
	case "tools/call":
		f := m.fast
		if f == nil {
			f = &fastPath{versions: mcp.SupportedProtocolVersions()}
		}
		fc, ok := f.recogniseBody(r.Header, body)
		if !ok {
			// A multi round-trip retry, which the fast path leaves to the
			// SDK: its round may be answered with a task.
			fc, ok = recogniseRetry(f, r.Header, w)
		}
		if !ok || !fc.newProtocol || !tasksExtensionDeclared(fc.req.Params.Meta) {
			return nil, false
		}
		e := m.taskEntry(r.Context(), fc.req.Params.Name)
		support := ""
		if e != nil {
			support = m.taskSupportNow(r.Context(), e)
		}
		if _, idem := fc.req.Params.Meta[MCPMetaIdempotencyKey]; support == "" || idem && support == "optional" {
			// An ordinary call (a legacy `task` param changes nothing); and
			// one with an idempotency key, whose replay would not be the
			// task, where the tool can run without one.
			return nil, false
		}
		fc.req.Extra = &mcp.RequestExtra{Header: r.Header}
		return &taskRequest{id: id, method: method, call: fc.req, ext: &extRequest{rev: fc.rev}}, true
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, false
	}
	var p extTaskParams
	if len(w.Params) == 0 || !sdkDecode(w.Params, &p) {
		return nil, false
	}
	header := r.Header.Get(protocolVersionHeader)
	metaVersion, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if metaVersion != header || r.Header.Get(methodHeader) != method {
		return nil, false // the SDK refuses these in its own words
	}
	if !requestMetaDecodes(p.Meta) {
		return nil, false
	}
	ext := &extRequest{rev: metaVersion, responses: p.InputResponses, can: clientCanAnswer(p.Meta)}
	tr := &taskRequest{id: id, method: method, ext: ext}
	if p.TaskID != nil {
		tr.taskID = *p.TaskID
	}
	switch name := r.Header.Get(nameHeader); {
	case p.TaskID == nil || *p.TaskID == "":
		ext.refused = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": missing taskId"}
	case name != *p.TaskID:
		ext.refused = &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("%s header %q does not match the request's taskId", nameHeader, policy.Bound(name))}
	case !tasksExtensionDeclared(p.Meta):
		ext.refused = missingTasksExtension("%s: declare the %s extension in the request's client capabilities", method, TasksExtension)
	}
	return tr, true
}

// recogniseRetry is recogniseBody for a tools/call that carries a round's
// inputResponses or requestState (w, its decoded envelope): the same
// checks of everything else (the body without them), then the round's
// members decoded as the SDK decodes them; false for anything else.
func recogniseRetry(f *fastPath, h http.Header, w wireMessage) (*fastCall, bool) {
	var params map[string]json.RawMessage
	if !sdkDecode(w.Params, &params) {
		return nil, false
	}
	_, hasResponses := params["inputResponses"]
	_, hasState := params["requestState"]
	if !hasResponses && !hasState {
		return nil, false
	}
	var round struct {
		InputResponses mcp.InputResponseMap `json:"inputResponses"`
		RequestState   string               `json:"requestState"`
	}
	if !sdkDecode(w.Params, &round) {
		return nil, false
	}
	delete(params, "inputResponses")
	delete(params, "requestState")
	stripped, err := json.Marshal(map[string]any{"jsonrpc": w.VersionTag, "id": w.ID, "method": w.Method, "params": params})
	if err != nil {
		return nil, false
	}
	fc, ok := f.recogniseBody(h, stripped)
	if !ok {
		return nil, false
	}
	fc.req.Params.InputResponses, fc.req.Params.RequestState = round.InputResponses, round.RequestState
	return fc, true
}

// answerTaskExt is a 2026-07-28 task request's answer.
func (m *Server) answerTaskExt(ctx context.Context, tr *taskRequest, owner string) (json.RawMessage, error) {
	if tr.ext.refused != nil {
		return nil, tr.ext.refused
	}
	if tr.method == "tools/call" {
		return m.createTask(ctx, tr, owner)
	}
	rec, e, ok, err := m.ownedTask(ctx, tr.method, tr.taskID, owner)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, taskNotFound(tr.taskID)
	}
	if rec.Dialect == mcpupstream.DialectTasksExtension {
		return m.answerExtUpstream(ctx, tr, rec, e) // tasksextup.go
	}
	up, ts := e.Tool.Spec.MCPTool, e.Tool.Spec.TLS
	switch tr.method {
	case "tasks/update":
		if err := m.updateTaskInput(ctx, tr, rec, e); err != nil {
			return nil, err
		}
		return json.Marshal(m.withServerInfo(map[string]any{"resultType": resultTypeFor(tr.ext.rev)}))
	case "tasks/cancel":
		_, err := m.taskUps.TaskRequest(withoutSDKValues(ctx), up, ts, rec.Session, "tasks/cancel", rec.UpstreamID)
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
			// 2025-11-25 refuses to cancel a task already done; the
			// extension's cancel is idempotent: ack when the task is there.
			_, err = m.taskUps.TaskRequest(withoutSDKValues(ctx), up, ts, rec.Session, "tasks/get", rec.UpstreamID)
		}
		if err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		return json.Marshal(m.withServerInfo(map[string]any{"resultType": resultTypeFor(tr.ext.rev)}))
	}
	// tasks/get
	out, err := m.taskUps.TaskRequest(withoutSDKValues(ctx), up, ts, rec.Session, "tasks/get", rec.UpstreamID)
	if err != nil {
		return nil, m.taskUpstreamError(ctx, tr, err)
	}
	t, err := mcpupstream.DecodeTask(out)
	if err != nil {
		return nil, m.taskUpstreamError(ctx, tr, err)
	}
	d := m.withServerInfo(extTask(tr.taskID, t, rec))
	d["resultType"] = resultTypeFor(tr.ext.rev)
	if t.Status != mcpupstream.TaskCompleted && t.Status != mcpupstream.TaskFailed {
		if t.Status != mcpupstream.TaskCancelled {
			m.showTaskInput(ctx, tr, rec, e, t, d)
		}
		return json.Marshal(d)
	}
	// A task done: its outcome inline (the upstream's tasks/result, which
	// answers at once now).
	res, err := m.taskUps.TaskResult(withoutSDKValues(ctx), up, ts, rec.Session, rec.UpstreamID)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		// A protocol error of the upstream's: "failed", with its code; its
		// own words may quote anything, so they are not passed on.
		d["status"] = mcpupstream.TaskFailed
		d["error"] = map[string]any{"code": rpcErr.Code, "message": fmt.Sprintf("tool %q: the upstream's task failed", policy.Bound(rec.Tool))}
	case err != nil:
		return nil, m.taskUpstreamError(ctx, tr, err)
	default:
		// A tool that ran and reported an error is "completed" (isError).
		if err := inlineTaskResult(d, e, res, tr.ext.rev); err != nil {
			return nil, err
		}
		d["status"] = mcpupstream.TaskCompleted
	}
	return json.Marshal(d)
}

// inlineTaskResult puts a done task's result (res, as a call's) into d, a
// tasks/get answer: held to the tool's max_result_bytes and mapped as a
// call's result; the task's id is the result's root, so no related-task
// _meta.
func inlineTaskResult(d map[string]any, e *registry.Entry, res pipeline.Result, rev string) error {
	cr, err := toolResult(pipeline.GuardResultSize(e, res), normalize.Report{})
	if err != nil {
		return err
	}
	if meta := cr.GetMeta(); meta != nil {
		delete(meta, metaRelatedTask)
		if len(meta) == 0 {
			cr.SetMeta(nil)
		}
	}
	cr.ResultType = resultTypeFor(rev)
	d["result"] = cr
	return nil
}

// extTask is an upstream's task as the extension shows it: the gateway's
// id, the Ms-suffixed durations (ttlMs: how long the gateway keeps it).
func extTask(id string, t *mcpupstream.Task, rec mcptasks.Record) map[string]any {
	out := map[string]any{"taskId": id, "status": t.Status, "createdAt": t.CreatedAt, "lastUpdatedAt": t.LastUpdatedAt,
		"ttlMs": extTTL(rec)}
	if t.PollInterval > 0 {
		out["pollIntervalMs"] = t.PollInterval
	}
	if t.StatusMessage != "" {
		out["statusMessage"] = policy.BoundTo(t.StatusMessage, 1<<10)
	}
	return out
}

// extTTL is what is left of the gateway's record, in whole ms (at least 1).
func extTTL(rec mcptasks.Record) int64 {
	return max(rec.Expires-time.Now().UnixMilli(), 1)
}

// createTaskResult is the extension's answer to a tools/call that made a
// task: the task flat in the result.
func (m *Server) createTaskResult(id string, t *mcpupstream.Task, rec mcptasks.Record) (json.RawMessage, error) {
	d := m.withServerInfo(extTask(id, t, rec))
	d["resultType"] = resultTypeTask
	return json.Marshal(d)
}

// withServerInfo names the server in a 2026-07-28 result's _meta, as the
// SDK does for the results it writes (annotateServerInfo).
func (m *Server) withServerInfo(d map[string]any) map[string]any {
	if m.impl != nil {
		d["_meta"] = map[string]any{mcp.MetaKeyServerInfo: m.impl}
	}
	return d
}

// requestMeta is a request's _meta (nil when it has no params).
func requestMeta(req mcp.Request) map[string]any {
	if req == nil {
		return nil
	}
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		return p.GetMeta()
	}
	return nil
}

// declareTasksExtension adds the extension to a server/discover answer
// when the caller is served tasks (a tool it may call takes them).
func (m *Server) declareTasksExtension(ctx context.Context, res mcp.Result) {
	dr, ok := res.(*mcp.DiscoverResult)
	if !ok || dr == nil || m.tasks == nil || m.taskUps == nil || !m.tasksOffered(ctx) {
		return
	}
	if dr.Capabilities == nil {
		dr.Capabilities = &mcp.ServerCapabilities{}
	}
	dr.Capabilities.AddExtension(TasksExtension, map[string]any{})
}

// taskSupportNow is taskSupportOf, waiting (within capsProbeTimeout) for
// the first read of the tool's upstream when it has never been read: a
// call must not be answered as a plain one because the face has not
// looked yet.
func (m *Server) taskSupportNow(ctx context.Context, e *registry.Entry) string {
	if s := m.taskSupportOf(ctx, e); s != "" {
		return s
	}
	if done := m.firstTaskSupportRead(e); done != nil {
		t := time.NewTimer(capsProbeTimeout)
		defer t.Stop()
		select {
		case <-done:
			return m.taskSupportOf(ctx, e)
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return ""
}
