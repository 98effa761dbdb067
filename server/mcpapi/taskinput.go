package mcpapi

// Input into a task. An upstream's 2025-11-25 task that needs its caller's
// input says input_required and asks with a request (elicitation/create,
// sampling/createMessage) on the response stream of tasks/result, its
// params' _meta naming the task (related-task). The gateway relays it:
//
//   - to a 2025-11-25 caller on the caller's own tasks/result stream, as a
//     call's requests are relayed (relay.go: its id, bounds, caller
//     matching and routing of the answer across replicas), the related
//     task named by the gateway's id, never the upstream's;
//   - to a caller of the 2026-07-28 tasks extension, which has no stream
//     to be asked on: tasks/get shows the task input_required with
//     inputRequests, and tasks/update carries the answers. The replica
//     whose tasks/get first sees the upstream task input_required takes
//     the task's reading lease (in the task's record, in the shared
//     store: one reader in the fleet at a time) and reads the upstream's
//     tasks/result stream for up to taskInputLease; every request read
//     goes into the record under a key of the gateway's (random), with
//     the upstream's request id, and is answered later: an upstream takes
//     the answer to its request by id in its session, from any POST, so
//     the replica a tasks/update reaches takes the answered requests out
//     of the record (atomically) and posts each answer itself. Until a
//     request is read the task shows working. Nothing of it is in one
//     replica's memory but the open stream.
//
// The policy (mcp_upstreams.input.forbid) and the bounds are a call's
// (backend relayInput: count a stream, size a request); a 2026-07-28
// caller that did not declare a kind (in the tasks/get that started the
// reader) has its upstream's request of that kind refused at once (and
// is shown why as the task's statusMessage while it runs), as does a
// full record (mcptasks.MaxPending requests, MaxPendingBytes); a
// request unanswered for pipeline.InputRelayMaxWait is dropped and its
// upstream answered MCPCodeInputTimeout.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// taskInputLease is how long one replica reads a task's tasks/result
// stream for its requests; the next tasks/get after it lapses, with the
// upstream still asking, starts another reader.
const taskInputLease = pipeline.InputRelayMaxWait

// taskInputKeyPrefix starts the keys of a task's inputRequests.
const taskInputKeyPrefix = "fdi-"

// taskRelay relays a 2025-11-25 caller's task's requests on its
// tasks/result stream (relay: the stream's faceRelay).
type taskRelay struct {
	relay  pipeline.InputRelay
	taskID string
}

func (r *taskRelay) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, bool, error) {
	p, err := relatedToTask(params, r.taskID)
	if err != nil {
		return nil, false, err
	}
	return r.relay.Ask(ctx, method, p)
}

// relatedToTask is an upstream's request params with the related-task
// _meta naming the gateway's task id, whatever the upstream put there.
func relatedToTask(params json.RawMessage, taskID string) (json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(params); len(t) > 0 && string(t) != "null" {
		if json.Unmarshal(t, &p) != nil || p == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the request's params are not an object"}
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := p["_meta"]; ok && (json.Unmarshal(raw, &meta) != nil || meta == nil) {
		meta = map[string]json.RawMessage{}
	}
	rel, err := json.Marshal(map[string]string{"taskId": taskID})
	if err != nil {
		return nil, err
	}
	meta[metaRelatedTask] = rel
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// errReaderLive stops a lease update: another reader holds it.
var errReaderLive = errors.New("a replica reads the task's stream")

// errTaskInputFull stops keeping a request: the record is full.
var errTaskInputFull = errors.New("the task's requests for input are at the gateway's bound")

// showTaskInput puts the task's requests for input into d, a tasks/get
// answer of a task not done: input_required with inputRequests when
// requests read await answers; working while the upstream's input_required
// has none read yet, after starting a reader when none reads.
func (m *Server) showTaskInput(ctx context.Context, tr *taskRequest, rec mcptasks.Record, e *registry.Entry, t *mcpupstream.Task, d map[string]any) {
	now := time.Now().UnixMilli()
	reqs := map[string]any{}
	expired := false
	if in := rec.Input; in != nil {
		if in.Refused != "" {
			d["statusMessage"] = in.Refused
		}
		for _, p := range in.Pending {
			if p.Expires <= now {
				expired = true
				continue
			}
			reqs[p.Key] = map[string]any{"method": p.Method, "params": p.Params}
		}
	}
	if expired {
		m.expireTaskInput(ctx, tr.taskID, rec, e)
	}
	if len(reqs) > 0 {
		d["status"] = mcpupstream.TaskInputRequired
		d["inputRequests"] = reqs
		return
	}
	if t.Status != mcpupstream.TaskInputRequired {
		return
	}
	d["status"] = mcpupstream.TaskWorking
	m.startTaskInputReader(ctx, tr, rec, e)
}

// startTaskInputReader takes the task's reading lease when it is free and
// reads the upstream's tasks/result stream in the background.
func (m *Server) startTaskInputReader(ctx context.Context, tr *taskRequest, rec mcptasks.Record, e *registry.Entry) {
	token := randomHex(8)
	can := slices.Sorted(maps.Keys(tr.ext.can))
	now := time.Now()
	_, ok, err := m.tasks.Update(ctx, tr.taskID, func(r *mcptasks.Record) error {
		if r.Input != nil && r.Input.ReaderUntil > now.UnixMilli() {
			return errReaderLive
		}
		if r.Input == nil {
			r.Input = &mcptasks.Input{}
		}
		r.Input.ReaderUntil, r.Input.Reader, r.Input.Can = now.Add(taskInputLease).UnixMilli(), token, can
		return nil
	})
	if err != nil && !errors.Is(err, errReaderLive) {
		m.log.WarnContext(ctx, "MCP tasks: the task store did not take the task's reading lease", "error", err)
	}
	if err != nil || !ok {
		return
	}
	go m.readTaskInput(tr.taskID, rec, e, token, can)
}

// readTaskInput reads the upstream task's tasks/result stream until the
// task ends or the lease does, keeping the requests for input it carries
// (taskCollector), then gives the lease up.
func (m *Server) readTaskInput(id string, rec mcptasks.Record, e *registry.Entry, token string, can []string) {
	ctx, cancel := context.WithTimeout(m.drain, taskInputLease)
	defer cancel()
	up, ts := e.Tool.Spec.MCPTool, e.Tool.Spec.TLS
	rctx := pipeline.WithInputRelay(ctx, &taskCollector{m: m, id: id, can: can})
	if _, err := m.taskUps.TaskResult(rctx, up, ts, rec.Session, rec.UpstreamID); err != nil && ctx.Err() == nil {
		m.log.Debug("MCP tasks: reading a task's requests for input ended", "tool", rec.Tool, "error", err)
	}
	uctx, stop := context.WithTimeout(context.WithoutCancel(ctx), capsProbeTimeout)
	defer stop()
	_, _, _ = m.tasks.Update(uctx, id, func(r *mcptasks.Record) error {
		if r.Input == nil || r.Input.Reader != token {
			return errReaderLive
		}
		r.Input.ReaderUntil, r.Input.Reader = 0, ""
		return nil
	})
}

// taskCollector keeps a task's requests for input, read from its upstream's
// stream, in its record for its 2026-07-28 caller (and answers none now).
type taskCollector struct {
	m   *Server
	id  string
	can []string
}

func (c *taskCollector) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, bool, error) {
	kind := pipeline.InputKindOf(method)
	if !slices.Contains(c.can, kind) {
		// The caller is told too, on the task while it runs.
		msg := fmt.Sprintf("the task asked its caller for %s, which the caller did not declare it can answer (client capability %s); its upstream was refused", kind, kind)
		uctx, stop := context.WithTimeout(context.WithoutCancel(ctx), capsProbeTimeout)
		defer stop()
		_, _, _ = c.m.tasks.Update(uctx, c.id, func(r *mcptasks.Record) error {
			if r.Input == nil {
				r.Input = &mcptasks.Input{}
			}
			r.Input.Refused = msg
			return nil
		})
		return nil, false, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("%s: the task's caller did not declare the %s capability", method, kind)}
	}
	p, err := relatedToTask(params, c.id)
	if err != nil {
		return nil, false, err
	}
	rid := mcpupstream.RequestID(ctx)
	pending := mcptasks.Pending{Key: taskInputKeyPrefix + randomHex(12), ID: rid, Method: method, Params: p,
		Expires: time.Now().Add(pipeline.InputRelayMaxWait).UnixMilli()}
	uctx, stop := context.WithTimeout(context.WithoutCancel(ctx), capsProbeTimeout)
	defer stop()
	_, ok, err := c.m.tasks.Update(uctx, c.id, func(r *mcptasks.Record) error {
		if r.Input == nil {
			r.Input = &mcptasks.Input{}
		}
		n := len(p)
		for _, q := range r.Input.Pending {
			n += len(q.Params)
		}
		if len(r.Input.Pending) >= mcptasks.MaxPending || n > mcptasks.MaxPendingBytes {
			return errTaskInputFull
		}
		r.Input.Pending = append(r.Input.Pending, pending)
		return nil
	})
	switch {
	case errors.Is(err, errTaskInputFull):
		return nil, false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"%s: the task already awaits its caller's answers to the most requests the gateway keeps (%d, %d bytes)", method, mcptasks.MaxPending, mcptasks.MaxPendingBytes)}
	case err != nil || !ok:
		if err != nil {
			c.m.log.Warn("MCP tasks: the task store did not keep a request for input", "error", err)
		}
		return nil, false, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": the gateway could not keep the request for the task's caller"}
	}
	return nil, true, mcpupstream.ErrAnswerLater
}

// updateTaskInput delivers tasks/update's inputResponses: each answers the
// request read under its key (a key of nothing awaiting — unknown,
// answered, expired — is ignored), taken out of the record at once and
// posted to the upstream.
func (m *Server) updateTaskInput(ctx context.Context, tr *taskRequest, rec mcptasks.Record, e *registry.Entry) error {
	raw, err := checkInputResponses(tr.ext.responses)
	if err != nil {
		return err
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &answers); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	var taken, expired []mcptasks.Pending
	_, ok, err := m.tasks.Update(ctx, tr.taskID, func(r *mcptasks.Record) error {
		taken, expired = nil, nil
		if r.Input == nil {
			return nil
		}
		var kept []mcptasks.Pending
		for _, p := range r.Input.Pending {
			_, answered := answers[p.Key]
			switch {
			case p.Expires <= now:
				expired = append(expired, p)
			case answered:
				taken = append(taken, p)
			default:
				kept = append(kept, p)
			}
		}
		r.Input.Pending = kept
		return nil
	})
	if err != nil || !ok {
		if err != nil {
			m.log.WarnContext(ctx, "MCP tasks: the task store did not answer", "error", err)
		}
		return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: "tasks/update: the gateway's task store did not answer; nothing was delivered"}
	}
	up, ts := e.Tool.Spec.MCPTool, e.Tool.Spec.TLS
	m.timeOutTaskInput(ctx, rec, e, expired)
	for i, p := range taken {
		if err := m.taskUps.TaskAnswer(withoutSDKValues(ctx), up, ts, rec.Session, p.ID, answers[p.Key], nil); err != nil {
			m.log.WarnContext(ctx, "MCP tasks: an answer to a task's request for input did not reach its upstream", "tool", rec.Tool, "error", err)
			// Still asked: the caller may answer again (an upstream takes
			// one answer to a request id and ignores another).
			m.keepTaskInput(ctx, tr.taskID, taken[i:])
			return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: fmt.Sprintf("tasks/update: the answer under %q did not reach the task; it is still asked, answer it again", policy.Bound(p.Key))}
		}
	}
	return nil
}

// keepTaskInput puts requests taken out of the task's record for answers
// that were not delivered back into it, within the record's bounds (one
// past them is left out: its upstream's own timeout ends it).
func (m *Server) keepTaskInput(ctx context.Context, id string, undelivered []mcptasks.Pending) {
	uctx, stop := context.WithTimeout(context.WithoutCancel(ctx), capsProbeTimeout)
	defer stop()
	_, _, err := m.tasks.Update(uctx, id, func(r *mcptasks.Record) error {
		if r.Input == nil {
			r.Input = &mcptasks.Input{}
		}
		n := 0
		for _, q := range r.Input.Pending {
			n += len(q.Params)
		}
		for _, p := range undelivered {
			if len(r.Input.Pending) >= mcptasks.MaxPending || n+len(p.Params) > mcptasks.MaxPendingBytes ||
				slices.ContainsFunc(r.Input.Pending, func(q mcptasks.Pending) bool { return q.Key == p.Key }) {
				continue
			}
			r.Input.Pending = append(r.Input.Pending, p)
			n += len(p.Params)
		}
		return nil
	})
	if err != nil {
		m.log.WarnContext(ctx, "MCP tasks: the task store did not take back a request whose answer was not delivered", "error", err)
	}
}

// expireTaskInput drops the task's requests unanswered past their time
// and tells their upstream.
func (m *Server) expireTaskInput(ctx context.Context, id string, rec mcptasks.Record, e *registry.Entry) {
	now := time.Now().UnixMilli()
	var expired []mcptasks.Pending
	_, _, err := m.tasks.Update(ctx, id, func(r *mcptasks.Record) error {
		expired = nil
		if r.Input == nil {
			return nil
		}
		var kept []mcptasks.Pending
		for _, p := range r.Input.Pending {
			if p.Expires <= now {
				expired = append(expired, p)
			} else {
				kept = append(kept, p)
			}
		}
		r.Input.Pending = kept
		return nil
	})
	if err == nil {
		m.timeOutTaskInput(ctx, rec, e, expired)
	}
}

// timeOutTaskInput answers requests dropped unanswered MCPCodeInputTimeout
// (best effort: the upstream may have given up on them itself).
func (m *Server) timeOutTaskInput(ctx context.Context, rec mcptasks.Record, e *registry.Entry, expired []mcptasks.Pending) {
	for _, p := range expired {
		rpcErr := &jsonrpc.Error{Code: MCPCodeInputTimeout, Message: p.Method + ": the caller did not answer within " + pipeline.InputRelayMaxWait.String()}
		_ = m.taskUps.TaskAnswer(withoutSDKValues(ctx), e.Tool.Spec.MCPTool, e.Tool.Spec.TLS, rec.Session, p.ID, nil, rpcErr)
	}
}
