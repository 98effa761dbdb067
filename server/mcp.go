package server

// The MCP endpoint: the same registry and the same InvokeTool pipeline as
// the gRPC API, served as a Model Context Protocol tool server over
// streamable HTTP (github.com/modelcontextprotocol/go-sdk).
//
// Design, briefly:
//   - Stateless transport: every POST is answered on its own, so any replica
//     can answer any request; no Mcp-Session-Id, no session affinity.
//   - tools/list comes from the SDK's tool set, which follows the registry
//     (Changes → AddTool/RemoveTools); a receiving middleware filters it per
//     caller. Changing the set is also what makes the SDK send
//     notifications/tools/list_changed.
//   - list_changed reaches clients speaking MCP 2026-07-28 (SEP-2575) on their
//     subscriptions/listen stream, which is itself a stateless POST. Clients
//     on older protocol versions need the standalone GET stream of a stateful
//     session, which a stateless server does not offer (405): they must
//     re-list (tools/list results are marked uncacheable, scope private).
//   - tools/call is intercepted before the SDK's own tool lookup and runs
//     pipeline.invoke, which looks the tool up in the live snapshot. So the
//     SDK neither validates arguments nor answers "unknown tool" before the
//     allow list has been checked (which would tell a denied caller which
//     tools exist).
//   - Authentication runs as HTTP middleware before MCP (401 +
//     WWW-Authenticate), with the same Authenticator as gRPC; a refused
//     tools/call gets its audit line there, like a refused InvokeTool.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// MCPPath is the URL path of the MCP endpoint.
const MCPPath = "/mcp"

// Keys the gateway uses in MCP _meta objects.
const (
	// MCPMetaRepairs (in a tools/call result): the RT-TOOL-8 repairs the
	// gateway made to the arguments, [{path, kind, passes?, boundHit?}].
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
)

// MCP JSON-RPC error codes beyond the standard ones.
const (
	// MCPCodePermissionDenied: the caller may not invoke tools at all (no
	// role for it). Implementation-defined range (-32000..-32099), clear of
	// the codes the SDK defines.
	MCPCodePermissionDenied = -32003
)

// MCPServer serves the MCP endpoint over HTTP at MCPPath.
type MCPServer struct {
	pipe *pipeline
	reg  *registry.Registry
	log  *slog.Logger
	sdk  *mcp.Server
	hs   *http.Server

	mu     sync.Mutex                 // guards synced
	synced map[string]*registry.Entry // what the SDK's tool set was built from

	// drain ends subscriptions/listen streams at shutdown: they never finish
	// on their own, so http.Server.Shutdown would wait for them forever.
	drain       context.Context
	cancelDrain context.CancelFunc
	stopSync    func()
	syncDone    chan struct{}
	closeOnce   sync.Once

	connMu   sync.Mutex
	newConns map[net.Conn]bool // accepted, no request read yet
}

// NewMCPServer builds the MCP endpoint over s's pipeline and reg (the
// registry s was built with). It follows reg until Shutdown.
func NewMCPServer(s *Server, reg *registry.Registry, cfg Config) (*MCPServer, error) {
	if s == nil || reg == nil {
		return nil, errors.New("server: NewMCPServer needs the gateway server and its registry")
	}
	m := &MCPServer{pipe: s.pipe, reg: reg, log: cfg.logger().With("component", "mcp"),
		synced: map[string]*registry.Entry{}, syncDone: make(chan struct{})}
	m.drain, m.cancelDrain = context.WithCancel(context.Background())
	m.sdk = mcp.NewServer(&mcp.Implementation{Name: "flowdrop-gateway", Version: "v1"}, &mcp.ServerOptions{
		// Tools only; advertise tools with listChanged even while the
		// registry is empty, so clients subscribe from the start.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				// Per caller (filtered) and live (the registry changes).
				c.TTLMs, c.CacheScope = 0, "private"
			}
		},
	})
	m.sdk.AddReceivingMiddleware(m.middleware)

	changes, unsubscribe := reg.Changes() // subscribe before the first sync: no change is missed
	m.stopSync = unsubscribe
	m.sync()
	go m.follow(changes)

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.sdk }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: int64(cfg.MaxRecvMsgSize),
		Logger:              m.log,
		// An agent that hangs up cancels its tool call, backend included,
		// as on gRPC (MCP 2026-07-28 requests; older ones cannot be tied).
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(MCPPath, m.authenticate(h))
	m.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelWarn), ConnState: m.trackConn}
	m.newConns = map[net.Conn]bool{}
	m.hs.RegisterOnShutdown(m.closeNewConns)
	return m, nil
}

// Handler is the endpoint's HTTP handler (MCPPath on a mux).
func (m *MCPServer) Handler() http.Handler { return m.hs.Handler }

// Serve accepts HTTP connections on lis until Shutdown; it returns nil after
// a Shutdown.
func (m *MCPServer) Serve(lis net.Listener) error {
	if err := m.hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown ends the subscriptions/listen streams, stops accepting requests,
// lets tool calls in flight finish until ctx is done, then closes the rest,
// and stops following the registry. Call it before Server.Shutdown: MCP
// calls use the gateway's backend connections.
func (m *MCPServer) Shutdown(ctx context.Context) error {
	m.cancelDrain()
	err := m.hs.Shutdown(ctx)
	if err != nil {
		m.hs.Close()
	}
	m.closeOnce.Do(m.stopSync)
	<-m.syncDone
	return err
}

// trackConn remembers connections that have not sent a request yet.
func (m *MCPServer) trackConn(c net.Conn, st http.ConnState) {
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
func (m *MCPServer) closeNewConns() {
	m.connMu.Lock()
	defer m.connMu.Unlock()
	for c := range m.newConns {
		c.Close()
	}
}

// follow re-syncs the SDK's tool set after every registry change.
func (m *MCPServer) follow(changes <-chan struct{}) {
	defer close(m.syncDone)
	for range changes { // closed by stopSync or by the registry's Close
		m.sync()
	}
}

// sync makes the SDK's tool set match the registry snapshot. Only changed
// entries are re-added, so an unrelated registry change sends no
// list_changed; the SDK debounces the notifications of one sync into one.
func (m *MCPServer) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[string]bool{}
	for _, e := range m.reg.Snapshot().List() {
		live[e.Tool.Name] = true
		if m.synced[e.Tool.Name] == e {
			continue
		}
		t, err := mcpTool(e)
		if err != nil {
			m.log.Error("tool not offered over MCP", "tool", e.Tool.Name, "error", err)
			continue
		}
		m.sdk.AddTool(t, m.unreachable)
		m.synced[e.Tool.Name] = e
	}
	var gone []string
	for name := range m.synced {
		if !live[name] {
			gone = append(gone, name)
			delete(m.synced, name)
		}
	}
	if len(gone) > 0 {
		m.sdk.RemoveTools(gone...)
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
	return &mcp.Tool{Name: e.Tool.Name, Description: e.Tool.Description, InputSchema: json.RawMessage(raw)}, nil
}

// unreachable is the SDK-level handler of every tool. tools/call never gets
// there (the middleware handles it), but AddTool needs a handler.
func (m *MCPServer) unreachable(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// authenticate is the HTTP middleware in front of MCP: the same
// Authenticator as gRPC, the caller stored with policy.WithCaller (the SDK
// hands the request's context values to the method handlers). A refusal is
// 401 with a WWW-Authenticate challenge and the caller-safe policy message.
func (m *MCPServer) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := m.pipe.authenticateHTTP(r)
		if err != nil {
			m.auditAuthFailure(r, err)
			msg, code := "authentication failed", http.StatusUnauthorized
			challenge := `Bearer realm="flowdrop"`
			if pe, ok := policy.AsError(err); ok {
				msg = pe.Message
				if pe.Code != policy.Unauthenticated {
					code = http.StatusForbidden
				}
				if pe.Reason != policy.ReasonCredentialsMissing {
					// RFC 6750 §3.1: credentials were sent but are not accepted.
					challenge += `, error="invalid_token"`
				}
			}
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, msg, code)
			return
		}
		next.ServeHTTP(w, r.WithContext(policy.WithCaller(r.Context(), caller)))
	})
}

// mcpPeekBytes bounds how much of a refused request's body is read to find
// its JSON-RPC method and tool name: enough for any ordinary tools/call, and
// small, since the caller is unauthenticated.
const mcpPeekBytes = 64 << 10

// auditAuthFailure writes the audit line (and counts the denial) for a
// tools/call that failed authentication, as the gRPC audit interceptor does
// for InvokeTool: the same pipeline.finish, so the same sink and record.
// Other methods (initialize, tools/list, …) are not tool calls and, as on
// gRPC, are not audited. The caller is unknown; the credential is never
// read into the record (AuditRecord has no field for it).
func (m *MCPServer) auditAuthFailure(r *http.Request, err error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return
	}
	peek, _ := io.ReadAll(io.LimitReader(r.Body, mcpPeekBytes))
	// Put back what was read, so whatever reads the body next sees all of it.
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), r.Body), r.Body}
	isCall, tool, callID := peekToolCall(peek)
	if !isCall {
		return
	}
	c := &call{tool: tool, callID: callID}
	beginCall(c)
	m.pipe.finish(r.Context(), c, err)
}

// peekToolCall reports whether body (a possibly truncated JSON-RPC request)
// is a tools/call, and its tool name and flowdrop/call_id when they could be
// read. It scans tokens, so a body cut off by the peek bound still yields
// the members before the cut.
func peekToolCall(body []byte) (isCall bool, tool, callID string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false, "", ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		switch k {
		case "method":
			var method string
			if dec.Decode(&method) != nil {
				return isCall, tool, callID
			}
			isCall = method == "tools/call"
		case "params":
			var params struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			}
			if dec.Decode(&params) != nil {
				return isCall, tool, callID
			}
			tool = params.Name
			callID, _ = params.Meta[MCPMetaCallID].(string)
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return isCall, tool, callID
			}
		}
	}
	return isCall, tool, callID
}

// middleware runs on every MCP method the SDK receives.
func (m *MCPServer) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return m.callTool(ctx, r)
			}
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				lr.Tools = m.visibleTools(ctx, lr.Tools)
			}
			return res, err
		case "subscriptions/listen":
			// The SDK holds the stream open until ctx ends; end it at shutdown.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(m.drain, cancel)
			defer stop()
			return next(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// visibleTools keeps the tools the caller may invoke: it must hold a role for
// InvokeTool and pass its tool allow/deny lists. Without an authorizer
// (authorization off) every tool is visible.
func (m *MCPServer) visibleTools(ctx context.Context, tools []*mcp.Tool) []*mcp.Tool {
	az := m.pipe.authz
	if az == nil {
		return tools
	}
	caller, ok := policy.CallerFrom(ctx)
	if !ok || az.AllowMethod(caller, invokeMethod) != nil {
		return []*mcp.Tool{}
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if az.AllowTool(caller, t.Name) == nil {
			out = append(out, t)
		}
	}
	return out
}

// callTool is tools/call: the MCP request becomes a call and runs the whole
// InvokeTool pipeline; the outcome becomes an MCP result or error.
func (m *MCPServer) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if p == nil || p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing tool name"}
	}
	args, err := parseMCPArguments(p.Arguments)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/call %q: arguments: %v", p.Name, err)}
	}
	caller, ok := policy.CallerFrom(ctx)
	if !ok {
		// Only if the HTTP middleware was bypassed: refuse rather than guess.
		return nil, &jsonrpc.Error{Code: MCPCodePermissionDenied, Message: "call was not authenticated"}
	}
	c := &call{tool: p.Name, args: args, caller: callerProto(caller)}
	if id, ok := p.Meta[MCPMetaCallID].(string); ok {
		c.callID = id
	}
	resp, report, err := m.pipe.invoke(ctx, c)
	if err != nil {
		return m.mcpCallError(ctx, c.tool, report, err)
	}
	return mcpResult(resp, report), nil
}

// mcpCallError is THE one place a pipeline error becomes an MCP outcome.
//
// MCP separates tool execution errors (a result with isError: true, which
// the model reads and can act on) from protocol errors (a JSON-RPC error,
// for the client, not the model). The rule here: if the model can do
// something about it — change the arguments, wait, try later or another way —
// it is an isError result; if the call could never have been made (no such
// tool, a tool this caller is not offered, no right to call tools, a
// cancelled request, our own bug) it is a JSON-RPC error.
//
//   - *registry.ValidationError → isError: the violations with their
//     pointers, and the repairs made before validation.
//   - *policy.Error: argument rules (rule-denied, rule-error), size limits
//     (InvalidArgument) and rate/in-flight limits (ResourceExhausted, with
//     the wait) → isError. Tool allow/deny lists → JSON-RPC invalid params,
//     like an unknown tool (the tool is not in this caller's tools/list); no
//     role for InvokeTool, unauthenticated → MCPCodePermissionDenied.
//   - unknown tool → JSON-RPC invalid params (the MCP spec's example).
//   - backend failures → isError: the MCP spec counts API failures as tool
//     execution errors. Unreachable/overloaded and deadline get a message that
//     names the tool and the budget but not the backend's address; any other
//     status the backend returned is its own message, passed on as gRPC does.
//   - cancellation → the context error; anything else → JSON-RPC internal
//     error "internal error" (logged, never sent).
func (m *MCPServer) mcpCallError(ctx context.Context, tool string, report normalize.Report, err error) (*mcp.CallToolResult, error) {
	var (
		ve *registry.ValidationError
		nf *toolNotFoundError
		be *backendError
	)
	if pe, ok := policy.AsError(err); ok {
		switch {
		case pe.Code == policy.Unauthenticated:
			return nil, &jsonrpc.Error{Code: MCPCodePermissionDenied, Message: pe.Message}
		case pe.Reason == policy.ReasonToolNotAllowed || pe.Reason == policy.ReasonToolDenied:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: pe.Message}
		case pe.Reason == policy.ReasonRoleMissing || pe.Reason == policy.ReasonMethodUnknown:
			return nil, &jsonrpc.Error{Code: MCPCodePermissionDenied, Message: pe.Message}
		}
		msg := pe.Message
		if pe.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry after %v)", pe.RetryAfter.Round(time.Millisecond))
		}
		return errorResult(msg, pe.Reason, report), nil
	}
	switch {
	case errors.As(err, &ve):
		var b strings.Builder
		b.WriteString(ve.Error())
		viol := make([]map[string]any, 0, len(ve.Violations))
		for _, v := range ve.Violations {
			ptr := v.Pointer
			if ptr == "" {
				ptr = "(root)"
			}
			fmt.Fprintf(&b, "\n- at %s: %s", ptr, v.Message)
			viol = append(viol, map[string]any{"path": v.Pointer, "message": v.Message})
		}
		r := errorResult(b.String(), "arguments-invalid", report)
		r.Meta[MCPMetaViolations] = viol
		return r, nil
	case errors.As(err, &nf):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", nf.tool)}
	case errors.As(err, &be):
		st := status.Convert(be.err)
		switch {
		case errors.Is(be.err, context.Canceled) || st.Code() == codes.Canceled:
			return nil, context.Canceled
		case errors.Is(be.err, context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
			return errorResult(fmt.Sprintf("tool %q did not answer within %v; it may be slow or stuck: try again later or another way",
				tool, be.timeout.Round(time.Millisecond)), "backend-deadline", report), nil
		case st.Code() == codes.Unavailable:
			return errorResult(fmt.Sprintf("tool %q is unavailable right now; try again later", tool),
				"backend-unavailable", report), nil
		}
		return errorResult(fmt.Sprintf("tool %q failed: %s: %s", tool, st.Code(), st.Message()), "backend-error", report), nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	}
	m.log.ErrorContext(ctx, "MCP tools/call failed", "tool", tool, "error", err.Error())
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// errorResult is an isError result whose text is msg followed by the repairs
// (so a model that reads only the text still learns them).
func errorResult(msg, reason string, report normalize.Report) *mcp.CallToolResult {
	if len(report.Repairs) > 0 {
		msg += "\nThe gateway repaired these arguments before checking them: " + describeRepairs(report.Repairs)
	}
	r := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}},
		Meta: mcp.Meta{MCPMetaReason: reason}}
	if rs := repairsMeta(report.Repairs); rs != nil {
		r.Meta[MCPMetaRepairs] = rs
	}
	return r
}

// mcpResult maps the backend's answer: one TextContent with the result (a
// string as itself, anything else as JSON), structuredContent when the result
// is an object, isError as the backend set it, and the repairs in _meta.
func mcpResult(resp *gatewayv1.InvokeResponse, report normalize.Report) *mcp.CallToolResult {
	r := &mcp.CallToolResult{IsError: resp.GetIsError(), Content: []mcp.Content{}}
	if v := resp.GetResult(); v != nil {
		text := v.GetStringValue()
		if _, isString := v.GetKind().(*structpb.Value_StringValue); !isString {
			text = valueJSON(v)
		}
		r.Content = append(r.Content, &mcp.TextContent{Text: text})
		if s := v.GetStructValue(); s != nil {
			r.StructuredContent = json.RawMessage(valueJSON(v))
		}
	}
	if rs := repairsMeta(report.Repairs); rs != nil {
		r.Meta = mcp.Meta{MCPMetaRepairs: rs}
	}
	return r
}

// valueJSON renders v as compact JSON without HTML escaping (the text is for
// a model, and "&" must stay "&"). protojson is not used: its output spacing
// is deliberately unstable.
func valueJSON(v *structpb.Value) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.AsInterface()); err != nil {
		// Only NaN or ±Inf numbers, which JSON cannot carry.
		raw, _ := v.MarshalJSON()
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func repairsMeta(rs []normalize.Repair) []map[string]any {
	if len(rs) == 0 {
		return nil
	}
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		m := map[string]any{"path": r.Path, "kind": r.Kind.String()}
		if r.Kind == normalize.EntitiesDecoded {
			m["passes"] = r.Passes
			if r.BoundHit {
				m["boundHit"] = true
			}
		}
		out[i] = m
	}
	return out
}

func describeRepairs(rs []normalize.Repair) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		what := "decoded a JSON string into its value"
		if r.Kind == normalize.EntitiesDecoded {
			what = "decoded HTML entities"
		}
		path := r.Path
		if path == "" {
			path = "(root)"
		}
		parts[i] = path + " (" + what + ")"
	}
	return strings.Join(parts, "; ")
}

// parseMCPArguments turns tools/call arguments (raw JSON) into a Struct.
// Absent or null means no arguments. A number that float64 (the Struct's
// number type) cannot hold as written is refused, naming it, rather than
// silently changed before the tool sees it.
func parseMCPArguments(raw json.RawMessage) (*structpb.Struct, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: data after the arguments object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON object, got %s", jsonKind(v))
	}
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(obj))}
	for k, x := range obj {
		val, err := toValue(x, "/"+escapePointer(k))
		if err != nil {
			return nil, err
		}
		s.Fields[k] = val
	}
	return s, nil
}

func toValue(x any, at string) (*structpb.Value, error) {
	switch x := x.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case bool:
		return structpb.NewBoolValue(x), nil
	case string:
		return structpb.NewStringValue(x), nil
	case json.Number:
		f, err := exactFloat(string(x))
		if err != nil {
			return nil, fmt.Errorf("number at %s: %v", at, err)
		}
		return structpb.NewNumberValue(f), nil
	case []any:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(x))}
		for i, e := range x {
			v, err := toValue(e, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			l.Values[i] = v
		}
		return structpb.NewListValue(l), nil
	case map[string]any:
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(x))}
		for k, e := range x {
			v, err := toValue(e, at+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			s.Fields[k] = v
		}
		return structpb.NewStructValue(s), nil
	}
	return nil, fmt.Errorf("value at %s: unsupported JSON type %T", at, x)
}

// exactFloat parses a JSON number literal, refusing one whose float64 is
// not the same number (e.g. 12345678901234567891 or 1e400): the value
// survives only if the shortest float64 formatting denotes the literal's
// exact decimal value.
func exactFloat(lit string) (float64, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is out of range for a 64-bit float", lit)
	}
	want, ok1 := new(big.Rat).SetString(lit)
	got, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok1 || !ok2 || want.Cmp(got) != 0 {
		return 0, fmt.Errorf("%s cannot be represented exactly as a 64-bit float (it would become %s); send it as a string", lit, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return f, nil
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}

// DefaultMCPListenAddr is where cmd/flowdrop-gateway serves MCP by default
// (loopback only, next to the gRPC port).
const DefaultMCPListenAddr = "127.0.0.1:7444"

// MCPConfig configures the MCP endpoint.
type MCPConfig struct {
	// ListenAddr is the host:port of the HTTP listener serving MCPPath;
	// empty turns MCP off.
	ListenAddr string
}

func (c *MCPConfig) validate() error {
	if c.ListenAddr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.ListenAddr)
	if err != nil {
		return fmt.Errorf("config: mcp listen address %q: %v", c.ListenAddr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("config: mcp listen address %q: port %q is not a number in 0..65535", c.ListenAddr, port)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return fmt.Errorf("config: mcp listen address %q: host must be an IP address, \"localhost\" or empty (all interfaces)", c.ListenAddr)
	}
	return nil
}

// runningMCP is the MCP endpoint Run started; nil when MCP is off.
type runningMCP struct {
	m    *MCPServer
	done chan struct{}
	log  *slog.Logger
}

// startMCP serves the MCP endpoint on cfg.MCP.ListenAddr, if set, and
// prints its URL under the banner.
func startMCP(cfg Config, srv *Server, reg *registry.Registry, log *slog.Logger) (*runningMCP, error) {
	if cfg.MCP.ListenAddr == "" {
		return nil, nil
	}
	m, err := NewMCPServer(srv, reg, cfg)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.MCP.ListenAddr)
	if err != nil {
		m.Shutdown(context.Background())
		return nil, fmt.Errorf("MCP listener: %w", err)
	}
	url := "http://" + dialAddr(lis.Addr()) + MCPPath
	log.Info("MCP endpoint serving (streamable HTTP, stateless)", "url", url)
	if cfg.Out != nil {
		fmt.Fprintf(cfg.Out, "MCP endpoint (streamable HTTP): %s\n\n", url)
	}
	r := &runningMCP{m: m, done: make(chan struct{}), log: log}
	go func() {
		defer close(r.done)
		if err := m.Serve(lis); err != nil {
			log.Error("MCP listener failed", "error", err.Error())
		}
	}()
	return r, nil
}

// stop shuts the endpoint down within ctx; a no-op when MCP is off.
func (r *runningMCP) stop(ctx context.Context) {
	if r == nil {
		return
	}
	if err := r.m.Shutdown(ctx); err != nil {
		r.log.Warn("MCP shutdown grace ran out; remaining calls were cut off")
	}
	<-r.done
}
