package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// ErrTasksUnsupported: the upstream is not one whose tasks the gateway can
// carry (a stdio or legacy SSE server on a revision other than
// 2025-11-25: the gateway speaks the tasks extension over streamable HTTP
// only).
var ErrTasksUnsupported = mcpupstream.ErrTasksUnsupported

// invokeTask is Invoke for a call its face asked to run as a task: the
// upstream is called task-augmented and the task it made goes into slot.
// The call's result is empty: the face answers with the task.
func (m *MCPUpstream) invokeTask(ctx context.Context, c *pipeline.Call, up *registry.MCPTool, ts *registry.TransportSecurity, subject string, args []byte, slot *pipeline.TaskSlot, budget time.Duration, source string) (pipeline.Result, error) {
	// As for a call: a second try only when the upstream did not know the
	// pooled session, which means the task was not made there.
	for try := 0; ; try++ {
		s, cs, caller, fresh, err := m.session(ctx, up, ts, subject)
		if err != nil {
			return pipeline.Result{}, m.failure(ctx, c, budget, source, err)
		}
		if caller == nil {
			m.release(s)
			return pipeline.Result{}, m.ts.failure(c, 0, "", status.Error(codes.FailedPrecondition, "the tool's upstream cannot run tasks through the gateway"))
		}
		t, sid, err := caller.CallToolTask(ctx, up.Tool, args, slot.TTLMs)
		m.release(s)
		if errors.Is(err, ErrTasksUnsupported) {
			return pipeline.Result{}, m.ts.failure(c, 0, "", status.Error(codes.FailedPrecondition,
				"the tool's upstream cannot run tasks through the gateway (a stdio or legacy SSE server on a revision whose tasks the gateway does not speak over it)"))
		}
		if err == nil {
			ttl := int64(0)
			if t.TTL != nil {
				ttl = max(*t.TTL, 0)
			}
			slot.Created = &pipeline.CreatedTask{Session: m.heldTaskSession(caller, sid), ID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage,
				TTLMs: ttl, PollInterval: t.PollInterval, CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt}
			enc, err := proto.Marshal(&gatewayv1.InvokeResponse{})
			if err != nil {
				return pipeline.Result{}, err
			}
			return pipeline.Result{Encoded: enc}, nil
		}
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			m.drop(s, cs)
		}
		if try == 0 && !fresh && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
			continue
		}
		return pipeline.Result{}, m.failure(ctx, c, budget, source, err)
	}
}

// TaskRequest sends method (tasks/get, tasks/result, tasks/cancel) for the
// upstream's task taskID in its session sid — made by any replica — under
// the guards Federated keeps: the declared credential, the backend
// receive limit, the caller's deadline or the default timeout. A task on
// another replica's connection (a held key: mcptaskrelay.go) is asked of
// that replica, an error wrapping mcptasks.ErrHolderUnavailable when it
// does not answer. It returns the upstream's result as sent; a JSON-RPC
// error is the upstream's. An error names the upstream's URL: it is for
// the log, never for a caller.
func (m *MCPUpstream) TaskRequest(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid, method, taskID string) (json.RawMessage, error) {
	if holder, instance, ok := mcptasks.ParseHeldKey(sid); ok {
		if holder != m.replica {
			return m.relayedTask(ctx, up, holder, instance, method, taskID)
		}
		sid = instance
	}
	var out json.RawMessage
	err := m.withCaller(ctx, up, ts, func(ctx context.Context, c *mcpupstream.Caller) error {
		var err error
		out, err = c.TaskRequest(ctx, sid, method, taskID)
		return err
	})
	return out, err
}

// withCaller is Federated for the gateway's own requests on an HTTP
// upstream's Caller (no retry: a task's session is its own, not the pool's).
func (m *MCPUpstream) withCaller(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, f func(context.Context, *mcpupstream.Caller) error) error {
	ctx, done, err := m.federatedContext(ctx, up)
	if err != nil {
		return err
	}
	defer done()
	// The relayed task methods carry no call, so no per-caller identity:
	// the upstream's shared session (static identity).
	s, cs, caller, _, err := m.session(ctx, up, ts, "")
	if err != nil {
		return m.federatedFailure(ctx, err)
	}
	if caller == nil {
		m.release(s)
		return ErrTasksUnsupported
	}
	err = f(ctx, caller)
	m.release(s)
	if err == nil {
		return nil
	}
	// The task's session is not the pool's: its end (404) leaves the
	// pooled session as it is; so does an answer the upstream gave, and the
	// end of the gateway's own wait (a tasks/result read for its requests
	// for input until a lease ends: closing the session would end its
	// tasks upstream).
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) && !errors.Is(err, mcpupstream.ErrResponseTooLarge) && !errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
		m.drop(s, cs)
	}
	return m.federatedFailure(ctx, err)
}

// TaskResult is tasks/result for the upstream's task taskID in session
// sid: the result of the call the task ran, as Invoke answers a call's
// (an encoded InvokeResponse), so the face's size guard and result
// mapping see it as they see any call's. Errors are TaskRequest's.
//
// The upstream's requests for input on the stream of tasks/result (a task
// in input_required) are relayed as a call's are (relayInput: the policy,
// the bounds, the InputRelay in ctx; none: refused), counted per
// tasks/result.
func (m *MCPUpstream) TaskResult(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid, taskID string) (pipeline.Result, error) {
	ctx = mcpupstream.WithInput(ctx, m.relayInput(&pipeline.Call{}, up))
	raw, err := m.TaskRequest(ctx, up, ts, sid, "tasks/result", taskID)
	if err != nil {
		return pipeline.Result{}, err
	}
	res, err := mcpupstream.DecodeCallToolResult(raw)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("upstream %s: tasks/result: %w", up.URL, err)
	}
	enc, err := mcpInvokeResponse(res)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("upstream %s: tasks/result does not convert: %w", up.URL, err)
	}
	return pipeline.Result{Encoded: enc}, nil
}

// TaskAnswer posts the answer (result, or rpcErr) to the upstream's
// request for input id (its JSON text), read earlier on the stream of a
// task's tasks/result, into the task's session sid. Errors are
// TaskRequest's.
func (m *MCPUpstream) TaskAnswer(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, sid string, id, result json.RawMessage, rpcErr *jsonrpc.Error) error {
	if holder, instance, ok := mcptasks.ParseHeldKey(sid); ok {
		if holder != m.replica {
			return m.relayedAnswer(ctx, up, holder, instance, id, result, rpcErr)
		}
		sid = instance
	}
	return m.withCaller(ctx, up, ts, func(ctx context.Context, c *mcpupstream.Caller) error {
		return c.AnswerRequest(ctx, sid, id, result, rpcErr)
	})
}

// TaskSupport is the upstream's tools that take tasks ("optional" or
// "required", by upstream tool name), read from its tools/list. Errors are
// TaskRequest's. A running stdio upstream's is what its session's listing
// said (stdioExecution), after a listing of its own — with
// ErrTasksUnsupported when its session carries no task requests (not on
// 2025-11-25), so the face offers none of its tools as tasks.
func (m *MCPUpstream) TaskSupport(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity) (map[string]string, error) {
	if _, stdio := registry.StdioName(up.URL); stdio {
		return m.stdioTaskSupport(ctx, up)
	}
	var out map[string]string
	err := m.withCaller(ctx, up, ts, func(ctx context.Context, c *mcpupstream.Caller) error {
		var err error
		out, err = c.ToolTaskSupport(ctx)
		return err
	})
	return out, err
}

// maxStdioExecution bounds the tools a stdio upstream's execution is kept
// for (its listings are not bounded on the way: execution.go reads them
// as they pass).
const maxStdioExecution = 10000

// stdioExecution is what a stdio upstream's listings said of its tools'
// execution.taskSupport: the go-sdk's client drops it, so its session's
// connection is read through (mcpupstream.ConnectOptions.OnToolExecution).
type stdioExecution struct {
	mu    sync.Mutex
	tools map[string]string
}

func (e *stdioExecution) tell(page map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, support := range page {
		switch {
		case support == "":
			delete(e.tools, name)
		case len(e.tools) < maxStdioExecution:
			e.tools[name] = support
		}
	}
}

// stdioExecutionOf is the record of the stdio upstream at url.
func (m *MCPUpstream) stdioExecutionOf(url string) *stdioExecution {
	e, _ := m.stdioExec.LoadOrStore(url, &stdioExecution{tools: map[string]string{}})
	return e.(*stdioExecution)
}

// stdioSession is the pooled session record of the stdio upstream at url
// (nil: none was ever made).
func (m *MCPUpstream) stdioSession(url string) *mcpUpstreamSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[keyFor(&registry.MCPTool{URL: url}, nil)]
}

// runningCaller is the running stdio upstream's session at url, or nil.
func (m *MCPUpstream) runningCaller(url string) *mcpupstream.Caller {
	s := m.stdioSession(url)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caller
}

// stdioTaskSupport lists the running stdio upstream's tools (the listing
// passes through its stdioExecution) and is what that said of those
// tools; ErrNotRunning when its process is not running: as for the
// follower, a server is not started only to be listed.
func (m *MCPUpstream) stdioTaskSupport(ctx context.Context, up *registry.MCPTool) (map[string]string, error) {
	tools, _, err := m.ListRunning(ctx, up.URL, mcpimport.Bounds{})
	if err != nil {
		return nil, err
	}
	uncarried := false
	if c := m.runningCaller(up.URL); c == nil || !c.CarriesTasks() {
		uncarried = true
	}
	e := m.stdioExecutionOf(up.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for _, t := range tools {
		if support := e.tools[t.Name]; support != "" {
			out[t.Name] = support
		}
	}
	if uncarried {
		return out, ErrTasksUnsupported
	}
	return out, nil
}
