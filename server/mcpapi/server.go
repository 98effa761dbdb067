package mcpapi

// The MCP endpoint: the same registry and the same InvokeTool pipeline as
// the gRPC API, served as a Model Context Protocol tool server over
// streamable HTTP (github.com/modelcontextprotocol/go-sdk).
//
// Design, briefly:
//   - Stateless transport: every POST is answered on its own, so any replica
//     can answer any request; no session affinity. The Mcp-Session-Id an
//     initialize answer carries is sealed state, not a key into a store
//     (session.go).
//   - tools/list is answered by the face from the registry snapshot, paged
//     per caller (toolslist.go); the SDK's tool set holds only what its
//     transport still needs, and a placeholder whose re-adding after each
//     change makes the SDK send notifications/tools/list_changed.
//   - list_changed reaches clients speaking MCP 2026-07-28 (SEP-2575) on their
//     subscriptions/listen stream, which is itself a stateless POST. Clients
//     on older protocol versions need the standalone GET stream of a stateful
//     session, which a stateless server does not offer (405): they must
//     re-list (tools/list results are marked uncacheable, scope private).
//     A face session's GET (session.go) carries its resource subscriptions'
//     updates only (sessionstream.go).
//   - tools/call is intercepted before the SDK's own tool lookup and runs
//     pipeline.Invoke, which looks the tool up in the live snapshot. So the
//     SDK neither validates arguments nor answers "unknown tool" before the
//     allow list has been checked (which would tell a denied caller which
//     tools exist).
//   - A caller in discovery mode (view.go) is listed two meta-tools instead
//     of its tools and calls them here, before the pipeline (discovery.go).
//   - Authentication runs as HTTP middleware before MCP (401 +
//     WWW-Authenticate), with the same Authenticator as gRPC; a refused
//     tools/call gets its audit line there, like a refused InvokeTool.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/search"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is the URL path of the MCP endpoint.
const Path = "/mcp"

// Keys the gateway uses in MCP _meta objects.
const (
	// MCPMetaRepairs (in a tools/call result): the repairs the gateway made
	// to the arguments (RT-TOOL-8's, and null-dropped where the policy drops
	// optional nulls), [{path, kind, passes?, boundHit?}].
	MCPMetaRepairs = "flowdrop/repairs"
	// MCPMetaViolations (in an isError result for invalid arguments): the
	// schema violations, [{path, message}].
	MCPMetaViolations = "flowdrop/violations"
	// MCPMetaReason (in an isError result): a stable reason such as
	// "arguments-invalid", a policy reason ("rule-denied", "rate-limited"),
	// or "backend-unavailable".
	MCPMetaReason = "flowdrop/reason"
	// MCPMetaCallID (in tools/call params): the caller's call id, forwarded
	// to the backend like InvokeToolRequest.call_id. MCP has no call id of its
	// own and the SDK does not expose the JSON-RPC id to handlers.
	MCPMetaCallID = "flowdrop/call_id"
	// MCPMetaIdempotencyKey (in tools/call params): the call's idempotency
	// key, like InvokeToolRequest.idempotency_key; a string.
	MCPMetaIdempotencyKey = "flowdrop/idempotency_key"
	// MCPMetaReplayed (in a tools/call result): true when the result is an
	// earlier call's stored outcome under the same idempotency key.
	MCPMetaReplayed = "flowdrop/replayed"
)

// MCP JSON-RPC error codes beyond the standard ones.
const (
	// MCPCodePermissionDenied: the caller may not invoke tools at all (no
	// role for it). Implementation-defined range (-32000..-32099), clear of
	// the codes the go-sdk reserves (codes_test.go).
	MCPCodePermissionDenied = -32016
)

// Config is what the MCP face is built from.
type Config struct {
	Pipeline *pipeline.Pipeline
	// Registry is the live registry. Every HTTP request is authenticated
	// with the pipeline's policy snapshot in force (pipeline.Policy; its
	// Auth nil: every request is refused), and its calls run under it.
	Registry *registry.Registry
	// MaxRequestBytes bounds a request body (0: the SDK's default, 4 MiB).
	MaxRequestBytes int
	// HTTP bounds the HTTP connections (timeouts, connection cap).
	HTTP HTTPLimits
	Log  *slog.Logger
	// CountRequest, when set, is told each MCP request's method (one of
	// countedMethods, else "other") and outcome: "ok", "tool-error" (a
	// tools/call whose result is isError) or "error" (a JSON-RPC error).
	CountRequest func(method, outcome string)
	// Tracer and Propagator, when set, trace the face: the caller's W3C
	// trace context (traceparent) is read from each HTTP request and every
	// tools/call gets a server span under it, parent of the backend call's.
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
	// ResourceURL is the endpoint's own URL, the protected resource named
	// in authorization discovery unless the policy's jwt.resource says
	// otherwise (resource_metadata.go).
	ResourceURL string
	// AllowedOrigins are the browser origins served (origin.go); requests
	// with any other Origin header are refused. SetAllowedOrigins replaces
	// them.
	AllowedOrigins []string
	// OKCallsLevel is the level of a successful request's access-log line
	// (accesslog.go): INFO, the zero value, or DEBUG.
	OKCallsLevel slog.Level
	// SDKOnly turns the tools/call fast path off (fastpath.go) and lists
	// tools the former way (toolslist.go: every tool in the SDK's set, its
	// pages filtered per caller): every request is answered by the SDK's
	// handler.
	SDKOnly bool
	// Upstreams, when set, serves the resources, prompts and completions
	// of the fronted upstream MCP servers (federation.go); UpstreamBounds
	// bound their listings (unset: mcpimport's defaults).
	Upstreams      Upstreams
	UpstreamBounds mcpimport.Bounds
	// InputState is how multi round-trip calls' state is sealed now
	// (input.go; the policy in force's keys). Unset, or without keys: a
	// random key made at New, so only this process continues a round.
	InputState func() InputState
	// Tasks and TaskUpstreams, both set, serve upstream tools' tasks to
	// 2025-11-25 callers (tasks.go): Tasks keeps who owns which.
	Tasks         mcptasks.Store
	TaskUpstreams TaskUpstreams
	// Search, when set, serves discovery mode (discovery.go) to the
	// callers Discovery names; SetDiscovery replaces them.
	Search    *search.Index
	Discovery DiscoveryPolicy
	// SessionTTL is the lifetime of the session ids the face mints for
	// callers before 2026-07-28 (session.go); 0: DefaultSessionTTL.
	SessionTTL time.Duration
	// SessionSubscriptions keeps face sessions' resource subscriptions
	// (sessionsubs.go): Redis in a fleet; unset, this replica's memory.
	SessionSubscriptions SessionSubscriptions
	// CancelFleet, when set, carries an older caller's
	// notifications/cancelled to the replica running its call (cancel.go).
	CancelFleet CancelFleet
	// InputFleet, when set, carries an older caller's answer to a relayed
	// request for input to the replica whose call awaits it (relay.go).
	InputFleet InputFleet
	// Browser are endpoints served beside the MCP endpoint for a person's
	// browser (the upstream authorization flow's start and callback):
	// ServeMux pattern → handler. They authenticate nothing of MCP's and
	// are not access-logged here (their query strings carry codes); each
	// logs its own outcome.
	Browser map[string]http.Handler
}

// countedMethods are the MCP methods counted by name (a client can send
// any method string; the label set stays bounded).
var countedMethods = map[string]bool{"initialize": true, "server/discover": true, "tools/list": true, "tools/call": true, "ping": true,
	"subscriptions/listen": true, "notifications/initialized": true}

// Server serves the MCP endpoint over HTTP at Path.
type Server struct {
	pipe *pipeline.Pipeline
	reg  *registry.Registry
	log  *slog.Logger
	sdk  *mcp.Server
	impl *mcp.Implementation
	hs   *http.Server
	// fast answers single tools/call requests without the SDK's per-message
	// decoding (fastpath.go); nil when off.
	fast *fastPath

	limits  HTTPLimits
	maxBody int
	count   func(method, outcome string)
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	// resource is the endpoint's URL from the listener (Config.ResourceURL).
	resource string
	origins  *originGuard
	okLevel  slog.Level
	// upstreams and bounds serve federation.go (nil: not offered).
	upstreams Upstreams
	bounds    mcpimport.Bounds
	fed       upstreamCache
	// input and randomKeys seal round state (input.go).
	input      func() InputState
	randomKeys *sealedstate.Keyring
	// sessionTTL is a minted session's lifetime (session.go).
	sessionTTL time.Duration
	// tasks and taskUps serve tasks.go (nil: not offered).
	tasks       mcptasks.Store
	taskUps     TaskUpstreams
	taskSupport taskSupportCache
	subs        subscriptions
	// sessionSubs and streams serve face sessions' subscriptions
	// (sessionsubs.go, sessionstream.go; nil: not offered); noticesDone
	// ends with its notices.
	sessionSubs SessionSubscriptions
	streams     streamSet
	noticesDone chan struct{}
	// search and discovery serve discovery mode (view.go, discovery.go).
	search    *search.Index
	discovery atomic.Pointer[DiscoveryPolicy]

	// sdkLists: the SDK's tool set holds every tool and its listing is
	// filtered per caller (Config.SDKOnly), instead of listTools.
	sdkLists bool
	// defs are the tools' MCP definitions (toolslist.go).
	defs toolDefs

	mu     sync.Mutex        // guards synced and inSDK
	synced []*registry.Entry // the snapshot's sorted entries sync last saw
	inSDK  map[string]bool   // tools the SDK's tool set holds

	// drain ends subscriptions/listen streams at shutdown: they never finish
	// on their own, so http.Server.Shutdown would wait for them forever.
	drain       context.Context
	cancelDrain context.CancelFunc
	stopSync    func()
	syncDone    chan struct{}
	closeOnce   sync.Once
	// closeOnceClosed closes closed once (Shutdown may be called again).
	closeOnceClosed sync.Once

	connMu   sync.Mutex
	newConns map[net.Conn]bool // accepted, no request read yet

	// inflight are the older revisions' tools/calls in flight, which a
	// caller's notifications/cancelled can end (cancel.go).
	inflight inflightCalls
	// fleet carries those notifications between replicas (nil: none);
	// fleetLookups bounds its lookups at once, fleetDone ends with Serve.
	fleet        CancelFleet
	fleetLookups chan struct{}
	fleetDone    chan struct{}

	// waits are the relayed requests for input awaiting their callers'
	// answers (relay.go); replica names this replica in their ids, and
	// inputFleet carries answers between replicas (nil: none).
	waits          inputWaits
	replica        string
	inputFleet     InputFleet
	inputFleetDone chan struct{}
	// closed is closed once Shutdown has stopped the HTTP server: relayed
	// requests still waiting for answers end then (relay.go).
	closed chan struct{}
}

// New builds the MCP endpoint over cfg's pipeline and registry. It
// follows the registry until Shutdown.
func New(cfg Config) (*Server, error) {
	if cfg.Pipeline == nil || cfg.Registry == nil {
		return nil, errors.New("mcpapi: New needs the pipeline and its registry")
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	reg := cfg.Registry
	if err := cfg.HTTP.Validate("mcp"); err != nil {
		return nil, err
	}
	origins, err := ParseOrigins(cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	m := &Server{pipe: cfg.Pipeline, reg: reg, log: log.With("component", "mcp"), count: cfg.CountRequest, tracer: cfg.Tracer, prop: cfg.Propagator,
		sdkLists: cfg.SDKOnly, inSDK: map[string]bool{}, syncDone: make(chan struct{}),
		limits: cfg.HTTP.WithDefaults(), maxBody: cfg.MaxRequestBytes, resource: cfg.ResourceURL,
		origins: newOriginGuard(origins), okLevel: cfg.OKCallsLevel, upstreams: cfg.Upstreams, bounds: cfg.UpstreamBounds,
		input: cfg.InputState, randomKeys: sealedstate.Random(), sessionTTL: cfg.SessionTTL,
		tasks: cfg.Tasks, taskUps: cfg.TaskUpstreams, search: cfg.Search, fleet: cfg.CancelFleet}
	m.SetDiscovery(cfg.Discovery)
	if m.sessionTTL <= 0 {
		m.sessionTTL = DefaultSessionTTL
	}
	if m.input == nil {
		m.input = func() InputState { return InputState{} }
	}
	if m.maxBody <= 0 {
		m.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	m.drain, m.cancelDrain = context.WithCancel(context.Background())
	if m.fleet != nil {
		m.fleetLookups, m.fleetDone = make(chan struct{}, fleetCancelLookups), make(chan struct{})
		go m.serveFleet()
	}
	if m.upstreams != nil {
		if m.sessionSubs = cfg.SessionSubscriptions; m.sessionSubs == nil {
			m.sessionSubs = NewMemorySessionSubscriptions()
		}
		m.noticesDone = make(chan struct{})
		go m.serveSessionNotices()
	}
	m.replica, m.closed = randomHex(12), make(chan struct{})
	if m.inputFleet = cfg.InputFleet; m.inputFleet != nil {
		m.replica = m.inputFleet.Self()
		m.inputFleetDone = make(chan struct{})
		go m.serveInputFleet()
	}
	var off string
	if m.fast, off = newFastPath(cfg.SDKOnly); m.fast == nil {
		m.log.Info("MCP tools/call fast path off", "why", off)
	}
	m.impl = &mcp.Implementation{Name: "flowdrop-gateway", Version: buildinfo.Read().ImplementationVersion()}
	opts := &mcp.ServerOptions{
		// Tools only (methods.go); advertise tools with listChanged even
		// while the registry is empty, so clients subscribe from the start.
		Capabilities: capabilities(),
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				listCacheable(c)
			}
		},
	}
	if m.upstreams != nil {
		m.subscribeOptions(opts) // subscriptions.go
	}
	m.sdk = mcp.NewServer(m.impl, opts)
	if m.upstreams != nil {
		m.addListChangedEntries()
	}
	m.sdk.AddReceivingMiddleware(m.middleware)

	changes, unsubscribe := reg.Changes() // subscribe before the first sync: no change is missed
	m.stopSync = unsubscribe
	m.sync()
	go m.follow(changes)

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.sdk }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: int64(m.maxBody),
		Logger:              m.log,
		// An agent that hangs up cancels its tool call, backend included,
		// as on gRPC (MCP 2026-07-28 requests; older ones cannot be tied).
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	// Origin and authentication read headers only; the body is read
	// (bounded) after them.
	mux.Handle(Path, m.accessLog(m.checkOrigin(m.traceContext(m.authenticate(m.checkSession(m.sessionStreams(m.readBody(h))))))))
	// Each bundle's endpoint (bundles.go): the same chain, behind the
	// bundle's lookup.
	mux.Handle(Path+"/", m.accessLog(m.bundleEndpoint(m.checkOrigin(m.traceContext(m.authenticate(m.checkSession(m.sessionStreams(m.readBody(h)))))))))
	// Public (RFC 9728): before authentication, no body read.
	mux.HandleFunc(ResourceMetadataPath, m.serveResourceMetadata)
	mux.HandleFunc(ResourceMetadataPath+"/", m.serveResourceMetadata)
	for pattern, bh := range cfg.Browser {
		mux.Handle(pattern, bh)
	}
	// No ReadTimeout or WriteTimeout here: httplimits.go sets them per
	// request, and says why.
	m.hs = &http.Server{Handler: m.writeDeadlines(mux),
		ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelWarn), ConnState: m.trackConn}
	m.limits.Apply(m.hs)
	m.newConns = map[net.Conn]bool{}
	m.hs.RegisterOnShutdown(m.closeNewConns)
	return m, nil
}

// Serve accepts HTTP connections on lis until Shutdown; it returns nil after
// a Shutdown.
func (m *Server) Serve(lis net.Listener) error {
	return m.limits.Serve(m.hs, lis)
}

// Shutdown ends the subscriptions/listen streams, stops accepting requests,
// lets tool calls in flight finish until ctx is done, then closes the rest,
// and stops following the registry. Call it before the backends close:
// MCP calls use them.
func (m *Server) Shutdown(ctx context.Context) error {
	m.cancelDrain()
	err := m.hs.Shutdown(ctx)
	if err != nil {
		m.hs.Close()
	}
	m.closeOnceClosed.Do(func() { close(m.closed) })
	m.closeOnce.Do(m.stopSync)
	<-m.syncDone
	if m.fleetDone != nil {
		<-m.fleetDone
	}
	if m.noticesDone != nil {
		<-m.noticesDone
	}
	if m.inputFleetDone != nil {
		<-m.inputFleetDone
	}
	return err
}

// trackConn remembers connections that have not sent a request yet.
func (m *Server) trackConn(c net.Conn, st http.ConnState) {
	m.connMu.Lock()
	defer m.connMu.Unlock()
	if st == http.StateNew {
		m.newConns[c] = true
	} else {
		delete(m.newConns, c)
	}
}

// closeNewConns runs when Shutdown has closed the listeners. net/http
// waits up to 5s for a connection that never sent a request (clients dial
// spares); such a connection has nothing in flight, so close it now.
func (m *Server) closeNewConns() {
	m.connMu.Lock()
	defer m.connMu.Unlock()
	for c := range m.newConns {
		c.Close()
	}
}

// follow re-syncs what the face keeps of the registry (sync) after every
// change.
func (m *Server) follow(changes <-chan struct{}) {
	defer close(m.syncDone)
	for range changes { // closed by stopSync or by the registry's Close
		m.sync()
	}
}

// mcpTool is the MCP tool definition of a registry entry. The registry
// accepts an object root written as `"type": ["object"]` or as bare
// `properties`; MCP (and the SDK) require `"type": "object"`, which means the
// same for arguments that always arrive as an object, so the advertised copy
// says so.
func mcpTool(e *registry.Entry) (*mcp.Tool, error) {
	schema := map[string]any{}
	if e.Tool.InputSchema != nil {
		schema = e.Tool.InputSchema.AsMap()
	}
	schema["type"] = "object"
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	t := &mcp.Tool{Name: e.Tool.Name, Description: e.Tool.Description, InputSchema: json.RawMessage(raw),
		Annotations: mcpAnnotations(e.Tool.Annotations)}
	if os := e.Tool.OutputSchema; os != nil {
		out, err := json.Marshal(os.AsMap())
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		t.OutputSchema = json.RawMessage(out)
	}
	return t, nil
}

// mcpAnnotations are a tool's annotations as MCP advertises them; nil (no
// annotations) stays nil. The SDK holds readOnlyHint and idempotentHint as
// plain bools, so within an annotations object an unset one is sent as
// false, which is MCP's default for both; destructiveHint and openWorldHint
// (default true) stay unset when unset.
func mcpAnnotations(a *registry.ToolAnnotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &mcp.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint != nil && *a.ReadOnlyHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint,
		DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
}

// unreachable is the SDK-level handler of every tool. tools/call never gets
// there (the middleware handles it), but AddTool needs a handler.
func (m *Server) unreachable(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// middleware runs on every MCP method the SDK receives: counted and
// access-logged (accesslog.go) around the gateway's own handling.
func (m *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return m.observe(m.mintSessions(m.handle(next)))
}

// handle routes the methods the gateway answers itself.
func (m *Server) handle(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if res, err, ok := m.federate(ctx, method, req, next); ok {
			if method == "server/discover" && err == nil {
				m.declareTasksExtension(ctx, res) // tasksext.go
			}
			return res, err
		}
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return m.toolsCall(ctx, r, requestRevision(r))
			}
		case "tools/list":
			if lr, ok := req.(*mcp.ListToolsRequest); ok && !m.sdkLists {
				return m.listTools(ctx, lr) // toolslist.go
			}
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				rev := requestRevision(req)
				if m.viewFor(ctx).Discovery {
					lr.Tools, lr.NextCursor = m.metaTools(ctx), ""
					return lr, nil
				}
				lr.Tools = m.withoutTaskRequired(ctx, tasksUsable(rev, requestMeta(req)), m.visibleTools(ctx, lr.Tools))
				snap := m.reg.Snapshot()
				entries := make([]*registry.Entry, len(lr.Tools))
				for i, t := range lr.Tools {
					entries[i], _ = snap.Lookup(t.Name)
				}
				return m.withExecution(ctx, rev, lr, entries), nil
			}
			return res, err
		case "resources/subscribe", "resources/unsubscribe":
			return m.subscribeLegacy(ctx, method, req) // sessionsubs.go
		case "subscriptions/listen":
			// The SDK holds the stream open until ctx ends; end it at shutdown.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(m.drain, cancel)
			defer stop()
			return next(ctx, method, req)
		}
		if !servedMethods[method] && !strings.HasPrefix(method, "notifications/") {
			return nil, notOffered(method)
		}
		return next(ctx, method, req)
	}
}

// visibleTools keeps the tools the caller could invoke (pipeline.Visible,
// the rule every listing uses).
func (m *Server) visibleTools(ctx context.Context, tools []*mcp.Tool) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if m.pipe.Visible(ctx, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// toolsCall is tools/call under protocol revision rev, traced: the SDK's
// path (handle) and the fast path (fastpath.go) both answer it here.
func (m *Server) toolsCall(ctx context.Context, req *mcp.CallToolRequest, rev string) (mcp.Result, error) {
	if m.tracer == nil {
		return m.callToolAs(ctx, req, rev)
	}
	ctx, span := m.tracer.Start(ctx, "MCP tools/call", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call")))
	defer span.End()
	res, err := m.callToolAs(ctx, req, rev)
	if err != nil {
		span.SetStatus(codes.Error, "JSON-RPC error")
	} else if cr, ok := res.(*callResult); ok && cr.IsError {
		span.SetStatus(codes.Error, "tool error")
	}
	return res, err
}

// callToolAs is callTool answered as protocol revision rev requires of a
// result. A nil result must stay a nil interface value for the SDK (it
// marshals an error then).
func (m *Server) callToolAs(ctx context.Context, req *mcp.CallToolRequest, rev string) (mcp.Result, error) {
	res, err := m.callTool(ctx, req, rev)
	if res == nil {
		return nil, err
	}
	if res.ResultType == "" {
		res.ResultType = resultTypeFor(rev)
	}
	return res, err
}

// callTool is tools/call: the MCP request becomes a call and runs the whole
// InvokeTool pipeline; the outcome becomes an MCP result or error.
func (m *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, rev string) (res *callResult, err error) {
	// A panic anywhere in the call is this call's Internal error, as on
	// the gRPC face (its recovery interceptor): the stack goes to the log,
	// the caller gets "internal error", the gateway keeps serving.
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("panic in tools/call", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
	}()
	p := req.Params
	if p == nil || p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing tool name"}
	}
	if registry.Reserved(p.Name) && m.viewFor(ctx).Discovery {
		return m.callMeta(ctx, p, rev)
	}
	callID, _ := p.Meta[MCPMetaCallID].(string)
	idemKey, isString := p.Meta[MCPMetaIdempotencyKey].(string)
	if v, given := p.Meta[MCPMetaIdempotencyKey]; given && !isString {
		// Ignoring it would run a call the client meant to run once.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/call %q: _meta[%q] must be a string, got %T", policy.Bound(p.Name), MCPMetaIdempotencyKey, v)}
	}
	// A caller on 2026-07-28 can answer an upstream's request for input
	// in rounds (input.go); one before it cannot, and sends no round.
	var round *pipeline.InputRound
	if rev >= RevisionResultType {
		if round, err = m.inputRound(ctx, p); err != nil {
			return nil, err
		}
	} else if p.RequestState != "" || p.InputResponses != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("tools/call %q: inputResponses and requestState are protocol revision %s's (multi round-trip); this request is on %q", policy.Bound(p.Name), RevisionResultType, rev)}
	}
	// A tool that runs only as a task, for a 2026-07-28 caller that did not
	// opt in to the tasks extension (tasksext.go).
	if pipeline.TaskFrom(ctx) == nil {
		if err := m.requireTasksExtension(ctx, p, rev); err != nil {
			return nil, err
		}
	}
	if pipeline.ProgressFrom(ctx) == nil {
		if sink := sdkProgressSink(ctx, req); sink != nil {
			defer sink.Close()
			ctx = pipeline.WithProgress(ctx, sink)
		}
	}
	// An older caller's notifications/cancelled for this call ends it (cancel.go).
	ctx, stop := withInflightCancel(ctx)
	defer stop()
	// From here the call is the gateway's: nothing the SDK's server keeps
	// for this request reaches a backend (sdkcontext.go).
	ctx = withoutSDKValues(ctx)
	// The policy the request was authenticated under is the call's.
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	var c *pipeline.Call
	if text := bytes.TrimSpace(p.Arguments); len(text) == 0 || string(text) == "null" {
		// No arguments: an empty object, as the SDK's own handlers see it.
		c = pipeline.NewCall(p.Name, callID, &structpb.Struct{Fields: map[string]*structpb.Value{}})
	} else {
		// The text as the client sent it: the pipeline parses it as it does
		// gRPC's arguments_json (strictly, within the call's limits), so a
		// refusal is the pipeline's, audited, and mapped by callError.
		c = pipeline.NewCall(p.Name, callID, nil)
		c.ReceiveJSON(pipeline.MCPArgumentsField, string(text), false)
	}
	c.UsePolicy(pol)
	c.Bundle = pipeline.BundleFrom(ctx) // the endpoint's (bundles.go)
	c.SetIdempotencyKey(idemKey)
	c.SetClient(clientName(req))
	c.Input = round
	out, perr := m.pipe.Invoke(ctx, c)
	ctx = withURLElicitation(ctx, rev, p.Meta)
	if perr != nil {
		if c.Entry != nil && pipeline.IsBackendFailure(perr) && perr.Reason != pipeline.ReasonBackendCanceled {
			// The result names neither the target nor the cause; the log does.
			m.log.WarnContext(ctx, "MCP tools/call: backend failed", "tool", c.Tool, "backend", c.Entry.Tool.Target(), "error", perr.Error())
		}
		return m.callError(ctx, perr, c.Report)
	}
	if out.InputRequired && round != nil && round.Asked {
		return m.inputRequiredResult(ctx, p.Name, round)
	}
	return toolResult(out, c.Report)
}

// traceContext reads the caller's W3C trace context from the request's
// headers into its context (a no-op without tracing).
func (m *Server) traceContext(next http.Handler) http.Handler {
	if m.prop == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := m.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
