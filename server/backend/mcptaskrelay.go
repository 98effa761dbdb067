package backend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// A task of a stdio or legacy SSE upstream lives on a connection in this
// process alone (mcptasks.HeldKey): its record names this replica, and a
// request for it that reaches another replica is relayed here over the
// fleet's Redis (mcptasks.Relay). The asking replica's face has checked
// the task's owner and tool; this replica runs the request on the
// connection, if it still has it, under its own guards (the credential
// the policy declares, its budget, its receive limit), and answers the
// upstream's result or JSON-RPC error. Requests for input on a relayed
// tasks/result are refused to the upstream: no caller can be asked here.

// newReplicaID is a replica id for a process without a relay (one node:
// every task is its own).
func newReplicaID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SetTaskRelay makes the tasks of this replica's stdio and legacy SSE
// sessions reachable from the fleet's other replicas through r, and
// theirs from here, until Close. Call it before serving.
func (m *MCPUpstream) SetTaskRelay(r mcptasks.Relay) {
	m.relay, m.replica = r, r.Self()
	ctx, stop := context.WithCancel(context.Background())
	m.relayStop = stop
	m.relayDone.Go(func() { r.Serve(ctx, m.serveRelayed) })
}

// heldTaskSession is sid made the key its record keeps: a connection's
// instance is named with this replica.
func (m *MCPUpstream) heldTaskSession(caller *mcpupstream.Caller, sid string) string {
	if caller.ConnectionBound() {
		return mcptasks.HeldKey(m.replica, sid)
	}
	return sid
}

// relayedTask sends method for the task in another replica's connection
// (holder, instance) to that replica and returns the upstream's result
// as TaskRequest does; an error wrapping mcptasks.ErrHolderUnavailable
// when the holder did not answer.
func (m *MCPUpstream) relayedTask(ctx context.Context, up *registry.MCPTool, holder, instance, method, taskID string) (json.RawMessage, error) {
	if m.relay == nil {
		// No fleet: no record names another replica (the store is this
		// process's); one that does is no task here.
		return nil, fmt.Errorf("%s: the task's connection is not this replica's: %w", method, mcp.ErrSessionMissing)
	}
	// The same budget as a local request: the asker waits for the
	// holder's answer until the request's own deadline.
	ctx, done, err := m.federatedContext(ctx, up)
	if err != nil {
		return nil, err
	}
	defer done()
	limit := int64(m.ts.cfg.MaxRecvMsgSize)
	ans, err := m.relay.Ask(ctx, holder, mcptasks.RelayRequest{Method: method, URL: up.URL, Instance: instance, TaskID: taskID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %s relayed to replica %s: %w", up.URL, method, holder, err)
	}
	switch ans.Failure {
	case "":
	case mcptasks.FailureGone:
		return nil, fmt.Errorf("%s: the task's connection has ended on replica %s: %w", method, holder, mcp.ErrSessionMissing)
	case mcptasks.FailureTooLarge:
		return nil, fmt.Errorf("%w: %s relayed from replica %s", mcpupstream.ErrResponseTooLarge, method, holder)
	case mcptasks.FailureTimeout:
		return nil, fmt.Errorf("%w: upstream %s: %s on replica %s", context.DeadlineExceeded, up.URL, method, holder)
	default:
		return nil, fmt.Errorf("upstream %s: %s failed on replica %s (its log says why)", up.URL, method, holder)
	}
	if ans.Code != 0 {
		return nil, &jsonrpc.Error{Code: ans.Code, Message: policy.BoundTo(ans.Message, mcptasks.MaxRelayMessageBytes)}
	}
	if int64(len(ans.Result)) > limit {
		return nil, fmt.Errorf("%w: %s relayed from replica %s answered %d bytes, over %d", mcpupstream.ErrResponseTooLarge, method, holder, len(ans.Result), limit)
	}
	if !json.Valid(ans.Result) {
		return nil, fmt.Errorf("upstream %s: %s relayed from replica %s: not JSON", up.URL, method, holder)
	}
	return ans.Result, nil
}

// relayedAnswer writes the answer (result, or rpcErr) to the upstream's
// request for input id on another replica's connection (holder,
// instance), through that replica; an error wrapping
// mcptasks.ErrHolderUnavailable when it does not answer.
func (m *MCPUpstream) relayedAnswer(ctx context.Context, up *registry.MCPTool, holder, instance string, id, result json.RawMessage, rpcErr *jsonrpc.Error) error {
	if m.relay == nil {
		return fmt.Errorf("the answer to a request for input: the task's connection is not this replica's: %w", mcp.ErrSessionMissing)
	}
	req := mcptasks.RelayRequest{Method: mcptasks.RelayAnswerMethod, URL: up.URL, Instance: instance, AnswerID: id, AnswerResult: result}
	if rpcErr != nil {
		req.AnswerResult, req.AnswerCode, req.AnswerMessage = nil, rpcErr.Code, policy.BoundTo(rpcErr.Message, mcptasks.MaxRelayMessageBytes)
	}
	if err := req.Check(); err != nil {
		return fmt.Errorf("upstream %s: the answer to a request for input cannot be relayed to replica %s: %w", up.URL, holder, err)
	}
	ctx, done, err := m.federatedContext(ctx, up)
	if err != nil {
		return err
	}
	defer done()
	ans, err := m.relay.Ask(ctx, holder, req)
	if err != nil {
		return fmt.Errorf("upstream %s: an answer relayed to replica %s: %w", up.URL, holder, err)
	}
	switch ans.Failure {
	case "":
		return nil
	case mcptasks.FailureGone:
		return fmt.Errorf("the answer to a request for input: the task's connection has ended on replica %s: %w", holder, mcp.ErrSessionMissing)
	}
	return fmt.Errorf("upstream %s: an answer relayed to replica %s failed there (its log says why)", up.URL, holder)
}

// serveRelayed runs a request another replica relayed for a task on one
// of this replica's connections.
func (m *MCPUpstream) serveRelayed(ctx context.Context, req mcptasks.RelayRequest) mcptasks.RelayAnswer {
	s, k, caller := m.heldSession(req.URL, req.Instance)
	if s == nil {
		return mcptasks.RelayAnswer{Failure: mcptasks.FailureGone}
	}
	defer m.release(s)
	up := &registry.MCPTool{URL: k.url, CredentialEnv: k.env, CredentialFile: k.file, Transport: k.transport}
	ctx, done, err := m.federatedContext(ctx, up)
	if err != nil {
		m.logRelayed(req, err)
		return mcptasks.RelayAnswer{Failure: mcptasks.FailureUpstream}
	}
	defer done()
	if req.Limit < int64(m.ts.cfg.MaxRecvMsgSize) {
		var stop context.CancelFunc
		ctx, stop = mcpupstream.WithResponseLimit(ctx, req.Limit)
		defer stop()
	}
	if req.Method == mcptasks.RelayAnswerMethod {
		var rpcErr *jsonrpc.Error
		if req.AnswerCode != 0 {
			rpcErr = &jsonrpc.Error{Code: req.AnswerCode, Message: req.AnswerMessage}
		}
		if err := caller.AnswerRequest(ctx, req.Instance, req.AnswerID, req.AnswerResult, rpcErr); err != nil {
			if errors.Is(err, mcp.ErrSessionMissing) {
				return mcptasks.RelayAnswer{Failure: mcptasks.FailureGone}
			}
			m.logRelayed(req, err)
			return mcptasks.RelayAnswer{Failure: mcptasks.FailureUpstream}
		}
		return mcptasks.RelayAnswer{}
	}
	if req.Method == "tasks/result" {
		// No InputRelay in ctx: the upstream's requests for input are
		// refused (the caller is another replica's).
		ctx = mcpupstream.WithInput(ctx, m.relayInput(&pipeline.Call{}, up))
	}
	raw, err := caller.TaskRequest(ctx, req.Instance, req.Method, req.TaskID)
	var rpc *jsonrpc.Error
	switch {
	case err == nil:
		return mcptasks.RelayAnswer{Result: raw}
	case errors.As(err, &rpc):
		return mcptasks.RelayAnswer{Code: rpc.Code, Message: policy.BoundTo(rpc.Message, mcptasks.MaxRelayMessageBytes)}
	case errors.Is(err, mcp.ErrSessionMissing):
		return mcptasks.RelayAnswer{Failure: mcptasks.FailureGone}
	case errors.Is(err, mcpupstream.ErrResponseTooLarge), errors.Is(context.Cause(ctx), mcpupstream.ErrResponseTooLarge):
		return mcptasks.RelayAnswer{Failure: mcptasks.FailureTooLarge}
	case ctx.Err() != nil:
		return mcptasks.RelayAnswer{Failure: mcptasks.FailureTimeout}
	}
	// As withCaller: a failure of the connection itself ends it.
	m.drop(s, caller.Session)
	m.logRelayed(req, err)
	return mcptasks.RelayAnswer{Failure: mcptasks.FailureUpstream}
}

func (m *MCPUpstream) logRelayed(req mcptasks.RelayRequest, err error) {
	if log := m.ts.cfg.Log; log != nil {
		log.Warn("MCP tasks: a task request relayed from another replica failed", "method", req.Method, "upstream", req.URL, "error", err)
	}
}

// heldSession is this replica's shared session to the upstream at url
// whose connection is instance, taken for a request (release it), with
// its key; nil when there is none (it ended). It never makes a session.
func (m *MCPUpstream) heldSession(url, instance string) (*mcpUpstreamSession, mcpUpstreamKey, *mcpupstream.Caller) {
	var candidates []*mcpUpstreamSession
	var keys []mcpUpstreamKey
	m.mu.Lock()
	for k, s := range m.sessions {
		if k.subject == "" && k.url == url {
			candidates, keys = append(candidates, s), append(keys, k)
		}
	}
	m.mu.Unlock()
	for i, s := range candidates {
		s.mu.Lock()
		if c := s.caller; c != nil && c.ConnectionBound() && c.ConnectionInstance() == instance {
			s.calls++
			s.mu.Unlock()
			return s, keys[i], c
		}
		s.mu.Unlock()
	}
	return nil, mcpUpstreamKey{}, nil
}
