package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpcontent"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// MCPUpstream is the backend kind of a tool of an upstream MCP server
// (registry.MCPTool): tools/call over streamable HTTP (mcpupstream.Caller
// on a go-sdk session, over the upstream's own connection pool), over the
// legacy HTTP+SSE transport (the go-sdk client), or over
// the stdio of a configured process (stdio://NAME, the go-sdk client), with
// the normalized arguments. One session per upstream (URL and credential
// reference; over stdio, one process), made on first use and made again
// after it fails — a stdio server at most once a second, so a process that
// keeps crashing is not restarted per call; the credential is read when a
// session is made, so a rotated file is picked up by the next session. The
// upstream's answer passes whole (mcpInvokeResponse): its content blocks
// and _meta, its structured content as the result's value when present
// (else its text joined by newlines), its isError as the tool error.
//
// It shares ToolService's deadline budget and failure classification:
// an unreachable upstream is Unavailable naming the tool, a slow one
// DeadlineExceeded naming the tool and the budget; neither names the URL
// or the credential (they are in the error's Cause, for the log).
type MCPUpstream struct {
	ts *ToolService
	// base is the HTTP transport under the credential header (nil: the
	// default transport).
	base http.RoundTripper

	mu       sync.Mutex
	sessions map[mcpUpstreamKey]*mcpUpstreamSession
	closed   bool
	// ending are dropped sessions closing in the background: closing one
	// can wait on the upstream (seconds, for a call it is still running),
	// which the failed call must not.
	ending sync.WaitGroup

	// listChanged hears a stdio server's notifications/tools/list_changed
	// with its URL (the follower's kick); set before the first call.
	listChanged func(url string)
	// generations numbers sessions and what an upstream said changed
	// (mcpUpstreamSession.generation).
	generations atomic.Uint64
	// progressTokens numbers the progress tokens of stdio calls.
	progressTokens atomic.Uint64
	// notice hears what an upstream notifies beyond its tools (resources
	// updated, prompt and resource lists changed) and that a new session
	// was made (NoticeSession); set before the first call.
	notice func(up *registry.MCPTool, ts *registry.TransportSecurity, method, uri string)
	// stdioExec is what each stdio upstream's listings said of its tools'
	// execution (mcptasks.go), by URL.
	stdioExec sync.Map
	// sweepStop ends the goroutine expiring idle per-caller sessions
	// (mcpsessions.go; nil until the first such session); sweeping waits
	// for it.
	sweepStop chan struct{}
	sweeping  sync.WaitGroup

	// replica names this process in the keys of its connection-bound
	// tasks (mcptaskrelay.go); relay reaches the other replicas' (nil: one
	// node), until relayStop; relayDone waits for its Serve.
	replica   string
	relay     mcptasks.Relay
	relayStop context.CancelFunc
	relayDone sync.WaitGroup
}

// NoticeSession is the method OnNotice is told with when a session to an
// upstream is made: what was subscribed on the one before is gone.
const NoticeSession = "flowdrop/session"

// OnNotice sets what hears an upstream's notifications/resources/updated
// (with the upstream's URI), notifications/prompts/list_changed and
// notifications/resources/list_changed, over any transport, and each new
// session (NoticeSession). It is called on the session's reading
// goroutine: it must not block. Call it before serving.
func (m *MCPUpstream) OnNotice(f func(up *registry.MCPTool, ts *registry.TransportSecurity, method, uri string)) {
	m.notice = f
}

// noticeHandlers are the session's client options: a change of its prompt
// or resource lists makes what was read of them stale (generation), and
// every notice is passed on (OnNotice).
func (m *MCPUpstream) noticeHandlers(s *mcpUpstreamSession, up *registry.MCPTool, ts *registry.TransportSecurity, o *mcp.ClientOptions) *mcp.ClientOptions {
	up = &registry.MCPTool{URL: up.URL, CredentialEnv: up.CredentialEnv, CredentialFile: up.CredentialFile, Transport: up.Transport}
	tell := func(method, uri string) {
		if f := m.notice; f != nil {
			f(up, ts, method, uri)
		}
	}
	o.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
		s.generation.Store(m.generations.Add(1))
		tell("notifications/prompts/list_changed", "")
	}
	o.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) {
		s.generation.Store(m.generations.Add(1))
		tell("notifications/resources/list_changed", "")
	}
	o.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		if r.Params != nil && r.Params.URI != "" {
			tell("notifications/resources/updated", r.Params.URI)
		}
	}
	return o
}

// ErrNotRunning is ListRunning's error when the stdio server has no
// process: listing does not start one.
var ErrNotRunning = errors.New("the stdio server is not running")

// OnToolListChanged sets what hears a running stdio server say its tools
// changed (it says so on the calls' own stream), with the server's URL
// (stdio://NAME). Call it before serving.
func (m *MCPUpstream) OnToolListChanged(f func(url string)) { m.listChanged = f }

// ListRunning lists a stdio server's tools within b over its running
// process's session (the one calls use), or is ErrNotRunning: a server is
// not started only to be listed.
func (m *MCPUpstream) ListRunning(ctx context.Context, url string, b mcpimport.Bounds) ([]*mcp.Tool, []mcpimport.Oversized, error) {
	s := m.stdioSession(url)
	if s == nil {
		return nil, nil, ErrNotRunning
	}
	s.mu.Lock()
	cs := s.cs
	if cs != nil {
		s.calls++
	}
	s.mu.Unlock()
	if cs == nil {
		return nil, nil, ErrNotRunning
	}
	defer m.release(s)
	return mcpimport.ListWithin(ctx, cs, b)
}

type mcpUpstreamKey struct {
	url, env, file string
	transport      registry.MCPTransport
	tls            registry.TransportSecurity // spec.tls (zero: none)
	// subject is the caller a session belongs to under a non-static
	// identity mode ("" under static): an upstream that binds its sessions
	// to the user (MCP's security guidance) sees one user per session.
	subject string
}

// shared is k without its subject: the upstream the session serves.
func (k mcpUpstreamKey) shared() mcpUpstreamKey {
	k.subject = ""
	return k
}

// mcpUpstreamSession is one upstream's session; mu serializes making it,
// so concurrent first calls make one.
type mcpUpstreamSession struct {
	mu sync.Mutex
	cs *mcp.ClientSession
	// caller sends an HTTP upstream's tools/call on cs (nil over stdio).
	caller *mcpupstream.Caller
	// transport is an HTTP upstream's connection pool, kept across its
	// sessions (a new session reuses the connections the old one left).
	transport *http.Transport
	// calls counts the calls between session and release; once retired
	// (no registered tool uses the upstream), the last of them closes cs —
	// also a cs a call made on s after it was retired, which is no longer
	// reachable from the sessions map.
	calls   int
	retired bool
	// started is when a stdio server's process was last started.
	started time.Time
	// used is when a call last took or released the session (UnixNano):
	// per-caller sessions are evicted least recently used first, and
	// expire unused (mcpsessions.go).
	used atomic.Int64
	// generation changes when cs is made and when the upstream says its
	// prompts or resources changed: what was read of it before is stale
	// (Current).
	generation atomic.Uint64
	// live is cs, read without mu (held while a session is being made,
	// which Current must not wait on).
	live atomic.Pointer[mcp.ClientSession]
	// declared are the kinds of input cs declared it can answer (the policy
	// when it was made; InputPolicyChanged).
	declared mcpupstream.InputKinds
}

// stdioRestartGap is the least time between two starts of one stdio
// server's process.
const stdioRestartGap = time.Second

// keyFor is the session key of an upstream under spec.tls.
func keyFor(up *registry.MCPTool, ts *registry.TransportSecurity) mcpUpstreamKey {
	k := mcpUpstreamKey{url: up.URL, env: up.CredentialEnv, file: up.CredentialFile, transport: up.Transport}
	if ts != nil {
		k.tls = *ts
	}
	return k
}

// Retain ends the sessions of upstreams no tool in live uses any more (a
// session in use ends after its last call), so deleted tools leave no
// connection behind.
func (m *MCPUpstream) Retain(live []*registry.Entry) {
	inUse := map[mcpUpstreamKey]bool{}
	for _, e := range live {
		if sp := e.Tool.Spec; sp != nil && sp.MCPTool != nil {
			inUse[keyFor(sp.MCPTool, sp.TLS)] = true
		}
	}
	var gone []*mcpUpstreamSession
	m.mu.Lock()
	for k, s := range m.sessions {
		if !inUse[k.shared()] {
			delete(m.sessions, k)
			gone = append(gone, s)
		}
	}
	m.mu.Unlock()
	// Outside m.mu: s.mu is held while a session is being made.
	for _, s := range gone {
		s.mu.Lock()
		s.retired = true
		m.closeIdle(s)
		s.mu.Unlock()
	}
}

// closeIdle closes s's session in the background when s is retired and no
// call uses it; s.mu is held.
func (m *MCPUpstream) closeIdle(s *mcpUpstreamSession) {
	if s.retired && s.calls == 0 && s.cs != nil {
		m.end(s)
	}
}

// end closes s's session in the background, then its idle connections; s.mu
// is held.
func (m *MCPUpstream) end(s *mcpUpstreamSession) {
	cs, tr := s.cs, s.transport
	s.cs, s.caller = nil, nil
	s.live.Store(nil)
	m.ending.Go(func() {
		if cs != nil {
			_ = cs.Close()
		}
		if tr != nil {
			tr.CloseIdleConnections()
		}
	})
}

// release ends a call's use of s (after session).
func (m *MCPUpstream) release(s *mcpUpstreamSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used.Store(time.Now().UnixNano())
	s.calls--
	m.closeIdle(s)
}

// NewMCPUpstream is the kind with ts's budget and classification.
func NewMCPUpstream(ts *ToolService) *MCPUpstream {
	return &MCPUpstream{ts: ts, sessions: map[mcpUpstreamKey]*mcpUpstreamSession{}, replica: newReplicaID()}
}

// Close ends every session; calls fail afterwards.
func (m *MCPUpstream) Close() {
	if m.relayStop != nil {
		// First: a relayed request in flight ends before its session.
		m.relayStop()
		m.relayDone.Wait()
	}
	m.mu.Lock()
	m.closed = true
	if m.sweepStop != nil {
		close(m.sweepStop)
	}
	for k, s := range m.sessions {
		s.mu.Lock()
		m.end(s) // in parallel: a stdio server may take seconds to exit
		s.mu.Unlock()
		delete(m.sessions, k)
	}
	m.mu.Unlock()
	m.ending.Wait()
	m.sweeping.Wait() // not under m.mu, which a sweep in progress waits on
}

// Invoke calls the upstream tool.
func (m *MCPUpstream) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	spec := c.Entry.Tool.Spec
	if spec == nil || spec.MCPTool == nil {
		return pipeline.Result{}, fmt.Errorf("tool %q has no MCP upstream", c.Tool) // Internal: dispatch's mistake
	}
	up := spec.MCPTool
	if perr := m.credentialUndeclared(c, up); perr != nil {
		return pipeline.Result{}, perr
	}
	ctx, subject, err := mcpIdentity(ctx, c, up)
	if err != nil {
		return pipeline.Result{}, err
	}
	args, err := c.Args()
	if err != nil {
		return pipeline.Result{}, err
	}
	// Encoded straight from the Struct (the audit line's encoder), not by
	// protojson: its reflection and key sorting were ~7 % of the gateway's
	// CPU on an MCP→MCP call (BENCHMARKS.md, "The client leg").
	js, err := policy.AppendStructJSON(make([]byte, 0, 1024), args)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("tool %q: encoding the arguments: a value JSON cannot carry (NaN, infinity, no kind or invalid UTF-8)", c.Tool)
	}
	if err := m.ts.checkSendSize(c, len(js)); err != nil {
		return pipeline.Result{}, err
	}
	// The upstream's answer is held to the backend receive limit as a gRPC
	// backend's is: the limit ends the call as soon as it is crossed.
	ctx, stop := mcpupstream.WithResponseLimit(ctx, int64(m.ts.cfg.MaxRecvMsgSize))
	defer stop()
	ctx, cancel, budget, source := m.ts.budgetContext(ctx, c)
	defer cancel()
	params := &mcp.CallToolParams{Name: up.Tool, Arguments: json.RawMessage(js)}
	// The caller's progress sink, when it asked for progress: the
	// upstream's progress for this call is reported to it (over HTTP read
	// from the call's own response; over stdio routed by the gateway's
	// token from the session's one stream, Caller.WatchProgress).
	var onProgress func(mcpupstream.Progress)
	if sink := pipeline.ProgressFrom(ctx); sink != nil {
		onProgress = func(p mcpupstream.Progress) {
			sink.Report(pipeline.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	slot := pipeline.TaskFrom(ctx)
	if _, perUser := credentialFrom(ctx); slot != nil && perUser {
		// A task's follow-ups carry no call, so no per-caller identity
		// (withCaller): the face offers no tasks of such a tool; this
		// holds it when a caller asks anyway.
		return pipeline.Result{}, m.ts.failure(c, 0, "", status.Error(codes.FailedPrecondition,
			"the tool's upstream is reached under a per-user identity mode, for which the gateway carries no tasks; call it without task augmentation"))
	}
	retry, perr := m.inputRetry(c, up)
	if perr != nil {
		return pipeline.Result{}, perr
	}
	ctx = mcpupstream.WithCallerInput(ctx, callerInput(ctx, c))
	var res *mcp.CallToolResult
	var created *mcpupstream.Task // a task the upstream answered with (the tasks extension)
	measured := false             // the answer was read whole, not cut off at the limit
	_, stdio := registry.StdioName(up.URL)
	// At most two tries: the second only when the upstream did not know
	// the pooled session (it restarted, or ended the session), which means
	// the call did not run there.
	for try := 0; ; try++ {
		s, cs, caller, fresh, err := m.session(ctx, up, spec.TLS, subject)
		if err != nil {
			return pipeline.Result{}, m.failure(ctx, c, budget, source, err)
		}
		if slot != nil && (caller == nil || !caller.TasksExtension()) {
			// Tasks the 2025-11-25 way (mcptasks.go), or none (stdio).
			m.release(s)
			return m.invokeTask(ctx, c, up, spec.TLS, subject, js, slot, budget, source)
		}
		if slot != nil && c.Input == nil {
			// The extension's task is reached only through the extension:
			// a caller on an older revision could not follow it.
			m.release(s)
			return pipeline.Result{}, m.ts.failure(c, 0, "", status.Error(codes.FailedPrecondition,
				"the tool's upstream runs tasks only through MCP 2026-07-28's tasks extension; call it on 2026-07-28 declaring the extension"))
		}
		if caller != nil && slot != nil {
			// The tasks extension (mcpupstream/taskext.go): any round may
			// be answered with a task.
			measured = caller.Measured()
			res, created, err = caller.CallToolRoundTask(mcpupstream.WithInput(ctx, m.relayInput(c, up)), up.Tool, js, onProgress, retry)
		} else if !stdio && caller != nil && !caller.Rounds() && retry == nil {
			// Legacy HTTP+SSE: the SDK's session, whose one stream carries
			// the upstream's progress beside the answers: routed by the
			// gateway's token (Caller.WatchProgress), as over stdio.
			measured = caller.Measured()
			res, err = m.callStdio(mcpupstream.WithInput(ctx, m.relayInput(c, up)), caller, params, onProgress)
		} else if !stdio && caller != nil {
			measured = caller.Measured()
			res, err = caller.CallToolRound(mcpupstream.WithInput(ctx, m.relayInput(c, up)), up.Tool, js, onProgress, retry)
		} else if retry != nil {
			err = &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputUnsupported, Tool: c.Tool,
				Message: fmt.Sprintf("tool %q: its upstream is a stdio server, whose rounds of requests for input (2026-07-28) the gateway does not relay", c.Tool)}
		} else {
			measured = true
			sctx := ctx
			if pipeline.InputRelayFrom(ctx) != nil {
				// Only a caller that can be asked gets its requests: any
				// other's are refused where they are read (mcpupstream's
				// attribution), without the cost of an asker per call.
				sctx = mcpupstream.WithInput(ctx, m.relayInput(c, up))
			}
			res, err = m.callStdio(sctx, caller, params, onProgress)
		}
		m.release(s)
		if err == nil {
			break
		}
		var rpc *jsonrpc.Error
		var pe *pipeline.Error
		if errors.As(err, &pe) {
			return pipeline.Result{}, pe
		}
		if !errors.As(err, &rpc) {
			m.drop(s, cs) // the session may be gone: the next call makes a new one
		}
		if try == 0 && !fresh && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
			continue
		}
		if pe := m.upstreamNeedsInput(c, up, err); pe != nil {
			return pipeline.Result{}, pe
		}
		return pipeline.Result{}, m.failure(ctx, c, budget, source, err)
	}
	if created != nil {
		return m.extTaskCreated(slot, created)
	}
	if res.InputRequests != nil && c.Input == nil && pipeline.InputRelayFrom(ctx) != nil {
		// A 2026-07-28 upstream's rounds, asked of an older caller on its
		// call's stream (mcpinput.go).
		if res, err = m.bridgeInput(ctx, c, up, spec.TLS, subject, js, onProgress, res); err != nil {
			var pe *pipeline.Error
			if errors.As(err, &pe) {
				return pipeline.Result{}, pe
			}
			return pipeline.Result{}, m.failure(ctx, c, budget, source, err)
		}
	}
	if res.InputRequests != nil {
		return m.inputRequired(c, up, res)
	}
	ir, err := mcpInvokeMessage(res)
	var enc []byte
	if err == nil {
		enc, err = proto.Marshal(ir)
	}
	if err != nil {
		return pipeline.Result{}, m.ts.failure(c, 0, "", status.Errorf(codes.Internal, "the upstream's answer does not convert: %v", err))
	}
	if measured && len(enc) > m.ts.cfg.MaxRecvMsgSize {
		// Over streamable HTTP the limit ends the read; over stdio and
		// legacy SSE the SDK bounds each message (16 MiB; over SSE the
		// limit, which ends the session's stream) and the limit is checked
		// once it is read.
		return pipeline.Result{}, m.ts.responseTooLarge(c)
	}
	// The message too: the MCP face reads it instead of decoding enc.
	return pipeline.Result{Encoded: enc, Decoded: ir}, nil
}

// callStdio calls the tool on a stdio or legacy SSE session, its requests
// for input asked through ctx's InputFunc when they are provably its own
// (mcpupstream.CallThroughSDK); with onProgress, under a progress token of
// the gateway's own (never a caller's), whose notifications reach
// onProgress in order, every one sent before the answer before the call
// returns (Caller.WatchProgress).
func (m *MCPUpstream) callStdio(ctx context.Context, caller *mcpupstream.Caller, params *mcp.CallToolParams, onProgress func(mcpupstream.Progress)) (*mcp.CallToolResult, error) {
	cs := caller.Session
	params = mcpupstream.DeclaringNoRounds(cs, params)
	if onProgress == nil {
		return mcpupstream.CallThroughSDK(ctx, cs, params)
	}
	token := mcpupstream.ProgressToken(m.progressTokens.Add(1))
	stop := caller.WatchProgress(token, onProgress)
	if stop == nil {
		return mcpupstream.CallThroughSDK(ctx, cs, params)
	}
	defer stop()
	p := *params
	p.Meta = mcp.Meta{}
	maps.Copy(p.Meta, params.Meta)
	p.SetProgressToken(token)
	return mcpupstream.CallThroughSDK(ctx, cs, &p)
}

// mcpInvokeResponse is the upstream's answer, whole, as an encoded
// InvokeResponse (the form Result.Encoded carries, so both faces, the
// size guard and the idempotency store see one answer): result is its
// value (mcpResultValue), content its blocks in order, meta its _meta less
// the keys that are not an upstream's to set (mcpcontent.Reserved).
func mcpInvokeResponse(res *mcp.CallToolResult) ([]byte, error) {
	ir, err := mcpInvokeMessage(res)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(ir)
}

// mcpInvokeMessage is mcpInvokeResponse's message, not yet encoded.
func mcpInvokeMessage(res *mcp.CallToolResult) (*gatewayv1.InvokeResponse, error) {
	v, err := mcpResultValue(res)
	if err != nil {
		return nil, fmt.Errorf("structured content: %w", err)
	}
	blocks, err := mcpcontent.FromMCP(res.Content)
	if err != nil {
		return nil, err
	}
	meta, err := mcpcontent.ResultMeta(res.Meta)
	if err != nil {
		return nil, fmt.Errorf("_meta: %w", err)
	}
	return &gatewayv1.InvokeResponse{Result: v, IsError: res.IsError, Content: blocks, Meta: meta}, nil
}

// session is the upstream's session, made when there is none (fresh); the
// call holds it until release.
func (m *MCPUpstream) session(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, subject string) (_ *mcpUpstreamSession, _ *mcp.ClientSession, _ *mcpupstream.Caller, fresh bool, _ error) {
	k := keyFor(up, ts)
	k.subject = subject
	var s *mcpUpstreamSession
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, nil, nil, false, errors.New("the gateway is shutting down")
		}
		s = m.sessions[k]
		if s == nil {
			if subject != "" {
				if err := m.makeRoomLocked(k); err != nil {
					m.mu.Unlock()
					return nil, nil, nil, false, err
				}
			}
			s = &mcpUpstreamSession{}
			s.used.Store(time.Now().UnixNano())
			m.sessions[k] = s
		}
		m.mu.Unlock()
		s.mu.Lock()
		// Evicted between the lookup and here: its session is closed, and
		// one made on it would be outside the per-caller bound.
		if s.retired && s.cs == nil && subject != "" {
			s.mu.Unlock()
			continue
		}
		break
	}
	defer s.mu.Unlock()
	s.used.Store(time.Now().UnixNano())
	if s.cs != nil {
		s.calls++
		return s, s.cs, s.caller, false, nil
	}
	if name, ok := registry.StdioName(up.URL); ok {
		cmd, ok := m.ts.cfg.MCPStdio[name]
		switch {
		case !ok:
			return nil, nil, nil, false, fmt.Errorf("upstream %s: no stdio server %q is configured on this gateway (mcp_upstreams.stdio)", up.URL, name)
		case !s.started.IsZero() && time.Since(s.started) < stdioRestartGap:
			return nil, nil, nil, false, fmt.Errorf("upstream %s: its process, started %v ago, has ended; it is started at most once per %v",
				up.URL, time.Since(s.started).Round(time.Millisecond), stdioRestartGap)
		}
		s.started = time.Now()
		o := mcpupstream.ConnectOptions{Client: m.noticeHandlers(s, up, nil, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				if f := m.listChanged; f != nil {
					f(up.URL)
				}
			}}), Input: m.inputDeclared(up.URL)}
		if log := m.ts.cfg.Log; log != nil {
			o.Stderr = mcpupstream.StderrLog(log, name)
		}
		o.OnToolExecution = m.stdioExecutionOf(up.URL).tell
		caller, err := mcpupstream.ConnectCommandCaller(ctx, cmd, o)
		s.declared = o.Input
		if count := m.ts.cfg.CountStdioStart; count != nil {
			count(name, err == nil)
		}
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("starting upstream %s: %w", up.URL, err)
		}
		if log := m.ts.cfg.Log; log != nil {
			log.Info("mcp stdio server started", "server", name) // a restart loop shows as many
		}
		// A process that exits between calls is forgotten (and reaped) at
		// once, so the next call starts it again instead of failing on it.
		cs := caller.Session
		go func() {
			_ = cs.Wait()
			m.drop(s, cs)
		}()
		s.cs, s.caller = cs, caller
		s.live.Store(cs)
		s.generation.Store(m.generations.Add(1))
		s.calls++
		m.tellSession(up, nil)
		return s, cs, caller, true, nil
	}
	ref := mcpupstream.Reference{Env: up.CredentialEnv, File: up.CredentialFile}
	h, _, err := ref.Load()
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("upstream %s: %w", up.URL, err)
	}
	if s.transport == nil {
		tr, err := m.transportFor(up.URL, ts)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("upstream %s: %w", up.URL, err)
		}
		s.transport = tr
	}
	var base http.RoundTripper = s.transport
	if m.base != nil && ts == nil {
		base = m.base
	}
	// Listen: the upstream's notifications (resources updated, lists
	// changed) have a stream to come on, beside the calls.
	declared := m.inputDeclared(up.URL)
	caller, err := mcpupstream.ConnectCaller(ctx, up.URL, h, mcpupstream.ConnectOptions{Base: base, MaxResponseBytes: int64(m.ts.cfg.MaxRecvMsgSize),
		Transport: mcpupstream.Transport(up.Transport), Listen: true, ClientNotificationsOnly: true, Input: declared,
		Client: m.noticeHandlers(s, up, ts, &mcp.ClientOptions{})})
	s.declared = declared
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("connecting to upstream %s: %w", up.URL, err)
	}
	s.cs, s.caller = caller.Session, caller
	s.live.Store(caller.Session)
	s.generation.Store(m.generations.Add(1))
	s.calls++
	m.tellSession(up, ts)
	return s, caller.Session, caller, true, nil
}

// tellSession tells OnNotice's function that a session to up was made,
// off the caller's goroutine (it may contact the upstream).
func (m *MCPUpstream) tellSession(up *registry.MCPTool, ts *registry.TransportSecurity) {
	if f := m.notice; f != nil {
		up := &registry.MCPTool{URL: up.URL, CredentialEnv: up.CredentialEnv, CredentialFile: up.CredentialFile, Transport: up.Transport}
		go f(up, ts, NoticeSession, "")
	}
}

// drop forgets cs if it is still s's session, and closes it in the
// background.
func (m *MCPUpstream) drop(s *mcpUpstreamSession, cs *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == cs {
		s.cs, s.caller = nil, nil
		s.live.Store(nil)
		m.ending.Go(func() { _ = cs.Close() })
	}
}

// failure classifies a failed upstream call. The call's own deadline or
// cancellation wins (the SDK wraps them in its own words); an upstream's
// refusal of the parameters is InvalidArgument naming the tool (its text,
// which may quote the arguments, is for the log); a redirect, which is
// not followed, is FailedPrecondition naming the tool; anything else —
// refused connection, HTTP error, a closed session — is Unavailable.
func (m *MCPUpstream) failure(ctx context.Context, c *pipeline.Call, budget time.Duration, source string, err error) *pipeline.Error {
	if errors.Is(err, errSubjectSessionsFull) {
		return m.subjectSessionsFull(c)
	}
	if errors.Is(context.Cause(ctx), mcpupstream.ErrResponseTooLarge) {
		return m.ts.responseTooLarge(c)
	}
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return m.ts.failure(c, budget, source, fmt.Errorf("%w: %v", context.DeadlineExceeded, err))
	case errors.Is(ctxErr, context.Canceled):
		return m.ts.failure(c, budget, source, fmt.Errorf("%w: %v", context.Canceled, err))
	}
	if errors.Is(err, mcpupstream.ErrRedirect) || errors.Is(err, mcpupstream.ErrOtherOrigin) {
		// Not an outage to retry: the upstream points elsewhere, and the
		// gateway sends a call (and the credential) only to the configured
		// URL. Where it pointed is in Cause, for the log.
		return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonBackendError, Tool: c.Tool, Cause: err,
			Message: fmt.Sprintf("tool %q: the upstream MCP server answered with a redirect, which the gateway does not follow", c.Tool)}
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
		return &pipeline.Error{Code: pipeline.InvalidArgument, Reason: pipeline.ReasonBackendError, Tool: c.Tool, Cause: err,
			Message: fmt.Sprintf("tool %q: the upstream MCP server refused the call's arguments", c.Tool)}
	}
	return m.ts.failure(c, budget, source, status.Error(codes.Unavailable, err.Error()))
}

// mcpResultValue is the upstream result's value: its structured content
// when present, else its text content joined by newlines (the answer's
// blocks, images included, travel beside it: mcpInvokeResponse).
func mcpResultValue(res *mcp.CallToolResult) (*structpb.Value, error) {
	if res.StructuredContent != nil {
		return structpb.NewValue(res.StructuredContent)
	}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return structpb.NewStringValue(strings.Join(texts, "\n")), nil
}

// transportFor is an upstream's own HTTP transport under spec.tls
// (HTTPTransportFor over m.base), its idle pool sized by
// MCPIdleConnsPerUpstream.
func (m *MCPUpstream) transportFor(url string, ts *registry.TransportSecurity) (*http.Transport, error) {
	base, _ := m.base.(*http.Transport)
	rt, err := HTTPTransportFor(url, ts, base)
	if err != nil {
		return nil, err
	}
	tr, _ := rt.(*http.Transport)
	return mcpupstream.PooledTransport(tr, m.ts.cfg.MCPIdleConnsPerUpstream), nil
}

// HTTPTransportFor is the HTTP transport to url under a tool's spec.tls:
// base (http.DefaultTransport when nil) without it; with it, a copy with TLS
// from the tool's CA and client certificate, and an http URL refused — the
// gateway never falls back to plaintext.
func HTTPTransportFor(url string, ts *registry.TransportSecurity, base *http.Transport) (http.RoundTripper, error) {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	if ts == nil {
		return base, nil
	}
	if strings.HasPrefix(strings.ToLower(url), "http://") {
		return nil, errors.New("the tool requires TLS but its URL is http")
	}
	cfg, err := TLSConfig(*ts)
	if err != nil {
		return nil, err
	}
	tr := base.Clone()
	tr.TLSClientConfig = cfg
	return tr, nil
}
