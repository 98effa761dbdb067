package mcpapi

// Tasks (MCP 2025-11-25, SEP-1686) of upstream MCP tools, relayed.
//
// A caller on revision 2025-11-25 may call a tool task-augmented
// (tools/call with params.task): the call runs the whole pipeline as any
// call does (policy, normalization, validation, audit) and its backend —
// an upstream MCP server (over stdio and legacy SSE, through requests sent
// beside the SDK's client: mcpupstream/side.go) — starts the task instead
// of answering. The face keeps who owns it in the task store (a fleet's
// Redis: any replica can answer for it), under a task id of its own
// (random: it says nothing of the upstream), and answers the caller a
// CreateTaskResult. tasks/get, tasks/result and tasks/cancel reach the
// upstream's task through the upstream session it lives in; tasks/list
// lists the caller's tasks. A task is its owner's alone: an id of another
// caller's task, of an expired one, or a made-up one gets one and the
// same "not found". tasks/result is a call's result, held to the tool's
// max_result_bytes.
//
// The go-sdk v1.8.0 knows no tasks: its server refuses the tasks/ methods
// before any middleware and drops params.task, and its types have no
// tasks capability nor a tool's execution. So these requests are answered
// here, at the HTTP layer (as the fast path answers tools/call), in the
// SDK's framing; `tasks` is added to the SDK's initialize answer
// (taskcaps.go); and a tool's execution.taskSupport is added to the SDK's
// tools/list answer for a 2025-11-25 caller, while a task-required tool is
// listed only to callers that can call it (tasksupport.go). 2026-07-28
// moved tasks to an extension (SEP-2663) with a wire of its own, served by
// tasksext.go over the same records and upstream requests. Older revisions
// are not served tasks: their requests go to the SDK, which refuses the
// methods as unknown.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sdkjson"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
)

// RevisionTasks is the revision whose callers are served tasks.
const RevisionTasks = "2025-11-25"

// metaRelatedTask is the _meta key naming the task a message belongs to.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// TaskUpstreams reaches the upstream tasks (backend.MCPUpstream).
type TaskUpstreams interface {
	// TaskRequest sends tasks/get or tasks/cancel for the upstream task id
	// in upstream session sid; the result as sent.
	TaskRequest(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid, method, id string) (json.RawMessage, error)
	// TaskResult is tasks/result, as a call's result.
	TaskResult(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid, id string) (pipeline.Result, error)
	// TaskSupport is the upstream's tools that take tasks, by upstream
	// name ("optional", "required"; tasksupport.go).
	TaskSupport(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity) (map[string]string, error)
	// TaskAnswer posts the answer (result, or rpcErr) to the upstream's
	// request for input id, read earlier, in session sid (taskinput.go).
	TaskAnswer(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid string, id, result json.RawMessage, rpcErr *jsonrpc.Error) error
	// ExtTaskRequest sends the 2026-07-28 tasks extension's tasks/update
	// (with inputResponses) or tasks/cancel for an upstream's task made
	// in that dialect (tasksextup.go); the result as sent.
	ExtTaskRequest(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, method, id string, inputResponses json.RawMessage) (json.RawMessage, error)
	// ExtTaskGet is the extension's tasks/get: the task, and its result
	// (nil: none) as a call's; a *pipeline.Error when its requests for
	// input cannot be relayed (tool names the gateway tool).
	ExtTaskGet(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, tool, id string) (*mcpupstream.DetailedTask, *pipeline.Result, error)
	// IdentityMode is Upstreams.IdentityMode: a task's follow-ups go on the
	// upstream's shared session, so only a static one's tasks are carried
	// (tasksCarried).
	IdentityMode(tool string, up *registry.MCPTool) identity.Mode
}

// taskListPage bounds one tasks/list answer (each entry is one tasks/get
// of its upstream).
const taskListPage = 20

// taskRequest is a request the face answers as tasks.
type taskRequest struct {
	id     jsonrpc.ID
	method string
	// call is a task-augmented tools/call's; ttlMs its task.ttl.
	call  *mcp.CallToolRequest
	ttlMs int64
	// taskID is tasks/get, tasks/result, tasks/cancel's; cursor tasks/list's.
	taskID string
	cursor string
	// ext: a request of the 2026-07-28 tasks extension (tasksext.go).
	ext *extRequest
}

// decodeTaskEnvelope is a task request's JSON-RPC envelope, as the SDK would
// read it: valid headers, bounded depth, valid JSON, version 2.0, a valid
// id and a method; false for anything else (which goes on to the SDK).
func decodeTaskEnvelope(r *http.Request, body []byte) (w wireMessage, id jsonrpc.ID, method string, ok bool) {
	if !(*fastPath)(nil).headersOK(r) || sdkjson.CheckDepth(body) != nil || !json.Valid(body) {
		return w, id, "", false
	}
	if !sdkDecode(body, &w) || w.VersionTag != "2.0" || len(w.Method) == 0 {
		return w, id, "", false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil || !id.IsValid() || !sdkDecode(w.Method, &method) {
		return w, id, "", false
	}
	return w, id, method, true
}

// recogniseTask is an authenticated POST the face answers as tasks, or
// false: everything else (and anything unusual) goes on as before. It
// costs a 2025-11-25 request that names no task one substring search.
func (m *Server) recogniseTask(r *http.Request, body []byte) (*taskRequest, bool) {
	if m.tasks == nil || m.taskUps == nil || r.Method != http.MethodPost {
		return nil, false
	}
	if v := r.Header.Get(protocolVersionHeader); v >= RevisionResultType {
		return m.recogniseTaskExt(r, body)
	} else if v != RevisionTasks {
		return nil, false
	}
	if !containsTask(body) {
		return nil, false
	}
	w, id, method, ok := decodeTaskEnvelope(r, body)
	if !ok {
		return nil, false
	}
	tr := &taskRequest{id: id, method: method}
	switch method {
	case "tools/call":
		p, ok := decodeCallParams(w.Params)
		if !ok {
			return nil, false
		}
		var aug struct {
			Task *struct {
				TTL *float64 `json:"ttl"`
			} `json:"task"`
		}
		if !sdkDecode(w.Params, &aug) || aug.Task == nil {
			return nil, false // an ordinary call
		}
		if v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string); v != "" && v != RevisionTasks {
			return nil, false
		}
		if t := aug.Task.TTL; t != nil && *t > 0 {
			tr.ttlMs = int64(min(*t, float64(mcptasks.MaxTTL.Milliseconds())))
		}
		tr.call = &mcp.CallToolRequest{Params: p}
	case "tasks/get", "tasks/result", "tasks/cancel":
		var p struct {
			TaskID string `json:"taskId"`
		}
		if len(w.Params) > 0 {
			_ = sdkDecode(w.Params, &p)
		}
		tr.taskID = p.TaskID
	case "tasks/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		if len(w.Params) > 0 {
			_ = sdkDecode(w.Params, &p)
		}
		tr.cursor = p.Cursor
	default:
		return nil, false
	}
	return tr, true
}

// containsTask: the body may be a task request (a cheap test first).
func containsTask(body []byte) bool {
	return bytes.Contains(body, []byte(`"task`))
}

// serveTask answers tr, counted and access-logged as any method.
func (m *Server) serveTask(w http.ResponseWriter, r *http.Request, tr *taskRequest) {
	// As for an older client's tools/call, the work is not tied to the
	// HTTP request (server.go, PropagateRequestCancellation); a 2026-07-28
	// request's ends when its caller hangs up.
	ctx := r.Context()
	if tr.ext == nil {
		ctx = context.WithoutCancel(ctx)
	}
	if tr.ext == nil && tr.method == "tasks/result" {
		// The upstream task's requests for input reach the caller on this
		// response's stream, as a call's do (taskinput.go).
		if relay := m.relayFor(ctx, &sseStream{w: w}); relay != nil {
			ctx = pipeline.WithInputRelay(ctx, &taskRelay{relay: relay, taskID: tr.taskID})
		}
	}
	handler := m.observe(func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		raw, err := m.answerTask(ctx, tr)
		if raw != nil {
			return &rawResult{raw: raw}, err
		}
		return res, err
	})
	var req mcp.Request
	if tr.call != nil {
		req = tr.call
	}
	res, err := handler(ctx, tr.method, req)
	var raw json.RawMessage
	if rr, ok := res.(*rawResult); ok {
		raw = rr.raw
	} else if res != nil {
		// A tools/call's own answer (the call was refused as a call).
		if tr.ext != nil {
			annotateServerInfo(res, m.impl)
		}
		raw, err = encodeResult(res)
	}
	m.writeTaskResponse(w, tr.id, raw, err, tr.ext != nil)
}

// rawResult carries an answer already encoded through observe.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

// answerTask is tr's answer: the result's JSON, or a JSON-RPC error (or,
// for a task-augmented tools/call refused as a call, its tool error).
func (m *Server) answerTask(ctx context.Context, tr *taskRequest) (raw json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("panic in "+tr.method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			raw, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
	}()
	owner := ownerOf(ctx)
	if tr.ext != nil {
		return m.answerTaskExt(ctx, tr, owner)
	}
	switch tr.method {
	case "tools/call":
		return m.createTask(ctx, tr, owner)
	case "tasks/list":
		return m.listTasks(ctx, tr.cursor, owner)
	}
	rec, e, ok, err := m.ownedTask(ctx, tr.method, tr.taskID, owner)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, taskNotFound(tr.taskID)
	}
	if rec.Dialect == mcpupstream.DialectTasksExtension {
		return nil, extTaskOnly(tr)
	}
	up, ts := e.Tool.Spec.MCPTool, e.Tool.Spec.TLS
	switch tr.method {
	case "tasks/result":
		res, err := m.taskUps.TaskResult(withoutSDKValues(ctx), up, ts, rec.Session, rec.UpstreamID)
		if err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		cr, err := toolResult(pipeline.GuardResultSize(e, res), normalize.Report{})
		if err != nil {
			return nil, err
		}
		meta := cr.GetMeta()
		if meta == nil {
			meta = map[string]any{}
		}
		meta[metaRelatedTask] = map[string]any{"taskId": tr.taskID}
		cr.SetMeta(meta)
		return encodeResult(cr)
	default: // tasks/get, tasks/cancel
		out, err := m.taskUps.TaskRequest(withoutSDKValues(ctx), up, ts, rec.Session, tr.method, rec.UpstreamID)
		if err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		t, err := mcpupstream.DecodeTask(out)
		if err != nil {
			return nil, m.taskUpstreamError(ctx, tr, err)
		}
		return json.Marshal(gatewayTask(tr.taskID, t))
	}
}

// ownerOf is the owner of the tasks the caller in ctx makes.
func ownerOf(ctx context.Context) string {
	c, _ := policy.CallerFrom(ctx)
	return mcptasks.OwnerOf(c.Method, c.Subject)
}

// ownedTask is the caller's live task id, with its tool's entry; false
// for anything else — another caller's task, an expired or unknown one, a
// tool gone or no longer the caller's — all answered alike; err (a
// JSON-RPC error for the caller) when the task store did not answer, so
// a task that may well exist is not called unknown.
func (m *Server) ownedTask(ctx context.Context, method, id, owner string) (mcptasks.Record, *registry.Entry, bool, error) {
	if !mcptasks.ValidID(id) {
		return mcptasks.Record{}, nil, false, nil
	}
	rec, ok, err := m.tasks.Get(ctx, id)
	if err != nil {
		m.log.WarnContext(ctx, "MCP tasks: the task store did not answer", "error", err)
		return mcptasks.Record{}, nil, false, &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable,
			Message: fmt.Sprintf("%s: the gateway's task store did not answer; try again", method)}
	}
	if !ok || rec.Owner != owner {
		return mcptasks.Record{}, nil, false, nil
	}
	e := m.taskEntry(ctx, rec.Tool)
	if e == nil {
		return mcptasks.Record{}, nil, false, nil
	}
	return rec, e, true, nil
}

// taskEntry is the live entry of tool when it is an upstream MCP tool whose
// tasks the face carries (tasksCarried) and the caller may invoke, else nil.
func (m *Server) taskEntry(ctx context.Context, tool string) *registry.Entry {
	e, ok := m.reg.Snapshot().Lookup(tool)
	if !ok || e.Tool.Spec == nil || e.Tool.Spec.MCPTool == nil || !m.pipe.Visible(ctx, tool) {
		return nil
	}
	if !m.tasksCarried(e) {
		return nil
	}
	return e
}

// tasksCarried: the face relays the tasks of e's upstream MCP tool. Not
// one the policy sends under a per-user identity mode: a task's follow-ups
// (tasks/get, tasks/result, tasks/cancel, tasks/update) carry no call, so
// they would go on the upstream's shared session with the static
// credential, not the session of the caller that made it. Nor one whose
// upstream session carries no task requests (upstreamCarriesTasks).
func (m *Server) tasksCarried(e *registry.Entry) bool {
	return m.taskUps.IdentityMode(e.Tool.Name, e.Tool.Spec.MCPTool) == identity.Static && m.upstreamCarriesTasks(e)
}

// taskNotFound is the one answer for any task id that is not the caller's.
func taskNotFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q not found", policy.Bound(id))}
}

// taskUpstreamError is the caller's error for a failed upstream task
// request: the upstream's refusal of the id is "not found" (the task ended
// there, or its session did); the silence of the replica holding a stdio
// or legacy SSE task's connection is not (the task may well run there);
// the rest upstreamError's.
func (m *Server) taskUpstreamError(ctx context.Context, tr *taskRequest, err error) error {
	var rpc *jsonrpc.Error
	if errors.Is(err, mcptasks.ErrHolderUnavailable) {
		m.log.WarnContext(ctx, "MCP tasks: the replica holding a task's upstream connection did not answer", "method", tr.method, "error", err)
		return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable,
			Message: fmt.Sprintf("%s: the gateway replica holding the task's upstream connection did not answer; try again", tr.method)}
	}
	if errors.Is(err, mcp.ErrSessionMissing) || errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
		return taskNotFound(tr.taskID)
	}
	return m.upstreamError(ctx, tr.method, "task", err)
}

// gatewayTask is an upstream's task as the caller sees it: under the
// gateway's id.
func gatewayTask(id string, t *mcpupstream.Task) map[string]any {
	out := map[string]any{"taskId": id, "status": t.Status, "createdAt": t.CreatedAt, "lastUpdatedAt": t.LastUpdatedAt, "ttl": t.TTL}
	if t.PollInterval > 0 {
		out["pollInterval"] = t.PollInterval
	}
	if t.StatusMessage != "" {
		out["statusMessage"] = policy.BoundTo(t.StatusMessage, 1<<10)
	}
	return out
}

// createTask runs a task-augmented tools/call: the pipeline, whose backend
// starts the upstream's task; then the task is recorded as the caller's.
func (m *Server) createTask(ctx context.Context, tr *taskRequest, owner string) (json.RawMessage, error) {
	p := tr.call.Params
	if p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing tool name"}
	}
	if _, ok := p.Meta[MCPMetaIdempotencyKey]; ok {
		// A replay would answer a stored (empty) result, not the task.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/call %q: a task-augmented call takes no idempotency key", policy.Bound(p.Name))}
	}
	if m.taskEntry(ctx, p.Name) == nil {
		// One answer for a tool that does not exist, is not the caller's,
		// or cannot run as a task: nothing tells them apart.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/call %q: no tool of that name can run as a task here", policy.Bound(p.Name))}
	}
	rev := RevisionTasks
	if tr.ext != nil {
		rev = tr.ext.rev
	}
	slot := &pipeline.TaskSlot{TTLMs: tr.ttlMs}
	res, err := m.toolsCall(pipeline.WithTask(ctx, slot), tr.call, rev)
	if err != nil {
		return nil, err
	}
	ct := slot.Created
	if ct == nil {
		// Refused as a call (policy, arguments, the backend): that answer.
		if tr.ext != nil {
			annotateServerInfo(res, m.impl)
		}
		return encodeResult(res)
	}
	ttl := mcptasks.MaxTTL
	if ct.TTLMs > 0 {
		ttl = min(ttl, time.Duration(ct.TTLMs)*time.Millisecond)
	}
	id := mcptasks.NewID()
	rec := mcptasks.Record{Owner: owner, Tool: p.Name, Session: ct.Session, UpstreamID: ct.ID, Dialect: ct.Dialect, CreatedAt: ct.CreatedAt,
		Expires: time.Now().Add(ttl).UnixMilli()}
	if err := m.tasks.Put(ctx, id, rec); err != nil {
		// The upstream runs a task no one can reach: end it.
		e := m.taskEntry(ctx, p.Name)
		if e != nil {
			go func() {
				ctx, stop := context.WithTimeout(withoutSDKValues(context.WithoutCancel(ctx)), capsProbeTimeout)
				defer stop()
				if ct.Dialect == mcpupstream.DialectTasksExtension {
					_, _ = m.taskUps.ExtTaskRequest(ctx, e.Tool.Spec.MCPTool, e.Tool.Spec.TLS, "tasks/cancel", ct.ID, nil)
					return
				}
				_, _ = m.taskUps.TaskRequest(ctx, e.Tool.Spec.MCPTool, e.Tool.Spec.TLS, ct.Session, "tasks/cancel", ct.ID)
			}()
		}
		if errors.Is(err, mcptasks.ErrFull) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("tools/call %q: the caller has %d live tasks, the most the gateway keeps; wait for some to expire", policy.Bound(p.Name), mcptasks.MaxPerOwner)}
		}
		m.log.WarnContext(ctx, "MCP tasks: the task store did not keep a task", "tool", p.Name, "error", err)
		return nil, &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: fmt.Sprintf("tools/call %q: the gateway could not keep the task", policy.Bound(p.Name))}
	}
	var upTTL *int64
	if ct.TTLMs > 0 {
		upTTL = &ct.TTLMs
	}
	lu := ct.LastUpdatedAt
	if lu == "" {
		lu = ct.CreatedAt
	}
	ut := &mcpupstream.Task{Status: ct.Status, StatusMessage: ct.StatusMessage, TTL: upTTL, PollInterval: ct.PollInterval,
		CreatedAt: ct.CreatedAt, LastUpdatedAt: lu}
	if tr.ext != nil {
		return m.createTaskResult(id, ut, rec)
	}
	return json.Marshal(map[string]any{"task": gatewayTask(id, ut)})
}

// listTasks is one page of the caller's tasks, each as its upstream
// describes it now; a task its upstream no longer knows is dropped.
func (m *Server) listTasks(ctx context.Context, cursor, owner string) (json.RawMessage, error) {
	start := 0
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		n, cerr := strconv.Atoi(string(b))
		if err != nil || cerr != nil || n < 0 || n > mcptasks.MaxPerOwner {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/list: invalid cursor"}
		}
		start = n
	}
	entries, err := m.tasks.List(ctx, owner)
	if err != nil {
		m.log.WarnContext(ctx, "MCP tasks: the task store did not answer", "error", err)
		return nil, &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: "tasks/list: the gateway's task store did not answer"}
	}
	tasks := []map[string]any{}
	next := ""
	for i := start; i < len(entries); i++ {
		if len(tasks) == taskListPage {
			next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(i)))
			break
		}
		en := entries[i]
		e := m.taskEntry(ctx, en.Tool)
		if e == nil || en.Dialect == mcpupstream.DialectTasksExtension {
			// (a task of the 2026-07-28 extension is not listed: that
			// revision has no tasks/list)
			continue
		}
		out, err := m.taskUps.TaskRequest(withoutSDKValues(ctx), e.Tool.Spec.MCPTool, e.Tool.Spec.TLS, en.Session, "tasks/get", en.UpstreamID)
		if err != nil {
			var rpc *jsonrpc.Error
			if errors.Is(err, mcp.ErrSessionMissing) || errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
				_ = m.tasks.Delete(ctx, en.ID) // gone upstream
			}
			continue
		}
		t, err := mcpupstream.DecodeTask(out)
		if err != nil {
			continue
		}
		tasks = append(tasks, gatewayTask(en.ID, t))
	}
	res := map[string]any{"tasks": tasks}
	if next != "" {
		res["nextCursor"] = next
	}
	return json.Marshal(res)
}

// writeTaskResponse writes the JSON-RPC response to id in the SDK's
// framing: one SSE "message" event; for a 2026-07-28 (newProtocol) error
// that has an HTTP status of its own (SEP-2575, and -32020's 400), a JSON
// body with that status.
func (m *Server) writeTaskResponse(w http.ResponseWriter, id jsonrpc.ID, raw json.RawMessage, err error, newProtocol bool) {
	resp := &jsonrpc.Response{ID: id, Result: raw}
	if err != nil {
		resp.Result, resp.Error = nil, err
	}
	data, eerr := jsonrpc.EncodeMessage(resp)
	if eerr != nil {
		m.log.Error("MCP tasks: response not encodable", "error", eerr)
		data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}})
	}
	setStreamHeaders(w.Header())
	status := sep2575Status(newProtocol, resp.Error)
	if je, ok := resp.Error.(*jsonrpc.Error); ok && newProtocol && je.Code == mcp.CodeHeaderMismatch {
		status = http.StatusBadRequest
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(data)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(sseEventPrefix)
	buf.Write(data)
	buf.WriteString(sseEventSuffix)
	_, _ = w.Write(buf.Bytes())
	_ = http.NewResponseController(w).Flush()
}
