package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/mcpcontent"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/rawcodec"
)

// Metadata the gateway sets on backend calls.
const (
	MDCallID = "x-flowdrop-call-id"
	MDCaller = "x-flowdrop-caller"
)

// propagatedMD are incoming headers passed to the backend unchanged so a
// request id follows the call.
var propagatedMD = []string{"grpc-trace-bin", "x-request-id"}

// traceMD is the W3C trace context (and baggage), copied unless the
// tracing stats handlers carry it (ToolServiceConfig.TracePropagated): a
// stale copy must not compete with the gateway's own client span.
var traceMD = []string{"traceparent", "tracestate", "baggage"}

// ToolServiceConfig configures the ToolBackendService kind.
type ToolServiceConfig struct {
	// DefaultTimeout bounds a call when neither the caller's deadline nor
	// the tool's timeout applies.
	DefaultTimeout time.Duration
	// MaxTimeout caps every call's budget, whatever the caller's deadline
	// or the tool's timeout say (0: no cap).
	MaxTimeout time.Duration
	// MaxRecvMsgSize and MaxSendMsgSize limit messages to and from backends.
	MaxRecvMsgSize, MaxSendMsgSize int
	// DialOptions are added to every backend connection (e.g. tracing).
	DialOptions []grpc.DialOption
	// TracePropagated: a stats handler in DialOptions injects the trace
	// context, so the incoming trace headers are not copied.
	TracePropagated bool
	// ReconnectMaxDelay caps the back-off between connection attempts to a
	// backend that went away (0: DefaultReconnectMaxDelay).
	ReconnectMaxDelay time.Duration
	// PassDebugInfo keeps google.rpc.DebugInfo details (stack entries, a
	// backend's internals) in the backend errors callers receive; by default
	// they are removed (policy file: backend_errors.pass_debug_info).
	PassDebugInfo bool
	// Ejection is outlier ejection for balanced targets (eject.go);
	// Threshold 0 turns it off. Ejections are logged to Log.
	Ejection EjectionConfig
	// TargetTLS is transport security per backend target (policy file
	// backend_tls), for tools whose spec sets no tls; the first match wins.
	// A target no entry matches is plaintext.
	TargetTLS []TargetTLS
	// MCPStdio are the MCP servers the gateway runs, by the name a tool's
	// mcp_tool.url gives (stdio://NAME; policy file mcp_upstreams.stdio).
	MCPStdio map[string]mcpupstream.Command
	// Log hears a stdio server's stderr (nil: discarded).
	Log *slog.Logger
	// CountStdioStart hears each start of a stdio server (nil: none).
	CountStdioStart func(server string, ok bool)
	// MCPIdleConnsPerUpstream is how many idle connections to one upstream
	// MCP server (streamable HTTP) are kept for the next calls (0:
	// mcpupstream.DefaultIdleConnsPerUpstream).
	MCPIdleConnsPerUpstream int
	// MCPSubjectSessions bounds the per-caller sessions one upstream MCP
	// server gets under a non-static identity mode, the least recently
	// used evicted (0: DefaultMCPSubjectSessions); MCPSubjectSessionIdle
	// closes one unused that long (0: DefaultMCPSubjectSessionIdle).
	MCPSubjectSessions    int
	MCPSubjectSessionIdle time.Duration
	// CountMCPSessionEviction hears each per-caller session closed by
	// those bounds, with EvictionCap or EvictionIdle (nil: none).
	CountMCPSessionEviction func(reason string)
	// CredentialAllowed says whether an upstream MCP tool may use the
	// credential it names, before it is read (nil: any): the gateway's
	// policy declares the sources (credentials).
	CredentialAllowed func(up *registry.MCPTool) error
	// InputForbidden is the kinds of input (pipeline.InputElicitation,
	// InputSampling, InputRoots) the policy in force forbids an upstream
	// MCP server (by its URL) to ask a caller for (nil: none).
	InputForbidden func(url string) []string
	// Identity is the identity resolver in force (server/identity; a
	// reload swaps it). Nil, or a nil resolver: every call static.
	Identity func() *identity.Resolver
}

// ToolService is the backend kind of a tool whose backend is a gRPC target
// serving flowdrop.gateway.v1.ToolBackendService: one pooled connection per
// target, the deadline budget, metadata, and the received bytes forwarded
// unchanged when nothing changed them.
type ToolService struct {
	cfg  ToolServiceConfig
	pool *backendPool
}

// NewToolService builds the kind; Close releases its connections.
func NewToolService(cfg ToolServiceConfig) *ToolService {
	// Transport credentials are per connection (pool.get): TLS or plaintext
	// by the tool's and the target's settings.
	opts := append([]grpc.DialOption{
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(cfg.MaxRecvMsgSize),
			grpc.MaxCallSendMsgSize(cfg.MaxSendMsgSize),
			// A default rather than a per-call option: gRPC copies the option
			// lists of a call that has both.
			rawcodec.CallOption(),
		),
		ConnectParams(cfg.ReconnectMaxDelay),
	}, windowOptions(cfg.MaxRecvMsgSize)...)
	opts = append(opts, cfg.DialOptions...)
	return &ToolService{cfg: cfg, pool: newBackendPool(opts, cfg.TargetTLS, cfg.Ejection, cfg.Log)}
}

// Ejections returns the outlier ejections of the connection serving tool
// (a ToolBackendService or gRPC-method backend): all so far and the
// addresses ejected now; ok is false unless a balanced connection is open.
// Tools sharing a target and transport security share the connection, and
// so the numbers.
func (t *ToolService) Ejections(tool *registry.Tool) (total uint64, ejected int, ok bool) {
	target := tool.Backend
	var own *registry.TransportSecurity
	if s := tool.Spec; s != nil {
		own = s.TLS
		if s.GRPCMethod != nil {
			target = s.GRPCMethod.Target
		}
	}
	if target == "" {
		return 0, 0, false
	}
	return t.pool.ejections(target, own)
}

// Retain closes the connections to targets inUse reports false for (once
// their calls finish).
func (t *ToolService) Retain(inUse func(target string) bool) { t.pool.retain(inUse) }

// Targets lists the targets with an open connection.
func (t *ToolService) Targets() []string { return t.pool.targets() }

// Close closes every connection; calls fail afterwards.
func (t *ToolService) Close() { t.pool.close() }

// Invoke calls the tool's backend. When the received request's bytes are
// still what the backend must get, they go as they are with the caller
// field after them (the messages share tool, arguments and call_id:
// internal/invokewire).
// The response comes back undecoded and is handed on as bytes when it is a
// plain InvokeResponse.
func (t *ToolService) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	var req any
	if rcv, ok := c.Forwardable(); ok && rcv.Message != nil {
		callerField, err := callerField(c)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("encoding the caller: %w", err)
		}
		if err := t.checkSendSize(c, len(rcv.Message)+len(callerField)); err != nil {
			return pipeline.Result{}, err
		}
		fwd := &rawcodec.Forward{Head: rcv.Message, Tail: callerField}
		if h, ok := rcv.Hold.(mem.Buffer); ok {
			fwd.Held = h
		}
		req = fwd
	} else {
		args, err := c.Args()
		if err != nil {
			return pipeline.Result{}, err
		}
		// Encoded here, once: the size check reads its length, and the codec
		// sends the bytes as they are (gRPC's would size the message again).
		b, err := proto.Marshal(&gatewayv1.InvokeRequest{Tool: c.BackendTool(), Arguments: args, CallId: c.CallID, Caller: callerProto(c)})
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("encoding the request: %w", err)
		}
		if err := t.checkSendSize(c, len(b)); err != nil {
			return pipeline.Result{}, err
		}
		req = &rawcodec.Forward{Head: b}
	}
	resp := new(rawcodec.Frame)
	if err := t.call(ctx, c, req, resp); err != nil {
		return pipeline.Result{}, err
	}
	if invokewire.IsPlainResponse(resp.Buf) {
		return pipeline.Result{Encoded: resp.Buf}, nil
	}
	// Unknown fields (a newer backend) must not reach the caller as, say,
	// repairs: decode what this gateway knows.
	var ir gatewayv1.InvokeResponse
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(resp.Buf, &ir); err != nil {
		return pipeline.Result{}, t.failure(c, 0, "", status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err))
	}
	if len(ir.GetContent()) == 0 && ir.GetMeta() == nil {
		return pipeline.Result{Value: ir.GetResult(), IsError: ir.GetIsError()}, nil
	}
	// An answer in MCP's content model: every block of a kind this gateway
	// knows (a block it cannot show is refused, not dropped), the _meta
	// less the keys that are not a backend's to set.
	for i, b := range ir.GetContent() {
		if b.GetBlock() == nil {
			return pipeline.Result{}, t.failure(c, 0, "", status.Errorf(codes.Internal, "content[%d] is of a kind this gateway does not know", i))
		}
	}
	if m := ir.GetMeta(); m != nil {
		for k := range m.GetFields() {
			if mcpcontent.Reserved(k) {
				delete(m.Fields, k)
			}
		}
		if len(m.GetFields()) == 0 {
			ir.Meta = nil
		}
	}
	enc, err := proto.Marshal(&ir)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("encoding the answer: %w", err)
	}
	return pipeline.Result{Encoded: enc}, nil
}

// checkSendSize refuses, before sending, a backend request over the
// gateway's backend send limit: gRPC's own refusal ("trying to send message
// larger than max") reads like the backend's failure, and it is not.
// ResourceExhausted, as gRPC answers an oversized message: it is a limit of
// the gateway's, named, that the caller's arguments (as normalized) cross.
func (t *ToolService) checkSendSize(c *pipeline.Call, n int) error {
	if max := t.cfg.MaxSendMsgSize; max > 0 && n > max {
		return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonGatewaySendLimit, Tool: c.Tool,
			Message: fmt.Sprintf("tool %q: the request to the backend would be %d bytes, over the gateway's backend send limit of %d bytes; send smaller arguments", c.Tool, n, max)}
	}
	return nil
}

// responseTooLarge reports gRPC's refusal of a received message over the
// client's receive limit (the backend's response).
func responseTooLarge(st *status.Status) bool {
	return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "received message larger than max")
}

// Deadline sources, for the DeadlineExceeded message.
const (
	deadlineCaller  = "the caller's deadline"
	deadlineTool    = "the tool's timeout"
	deadlineDefault = "the gateway's default timeout"
	deadlineMax     = "the gateway's maximum call timeout"
)

// call is the one backend call: the deadline budget, the pooled
// connection, the outgoing metadata, and the failure classified.
func (t *ToolService) call(ctx context.Context, c *pipeline.Call, req, resp any) error {
	return t.callMethod(ctx, c, c.Entry.Tool.Backend, gatewayv1.ToolBackendService_Invoke_FullMethodName, req, resp)
}

// callMethod is call for any target and method (the gRPC-method kind's).
// An idempotent tool's call is retried on Unavailable (retry.go); any
// other tool's is made once.
func (t *ToolService) callMethod(ctx context.Context, c *pipeline.Call, target, method string, req, resp any) error {
	ctx, cancel, budget, source := t.budgetContext(ctx, c)
	defer cancel()
	var own *registry.TransportSecurity
	if s := c.Entry.Tool.Spec; s != nil {
		own = s.TLS
	}
	conn, err := t.pool.get(target, own)
	if err != nil {
		// The cause (a TLS file's name, a malformed target) is for the log.
		return t.failure(c, budget, source, status.Error(codes.Unavailable, err.Error()))
	}
	defer conn.release()
	ctx = metadata.NewOutgoingContext(ctx, t.outgoingMD(ctx, c))
	attempts := 1
	if c.Entry.Tool.Idempotent() {
		attempts = retryAttempts
	}
	for attempt := 1; ; attempt++ {
		conn.reconnectIfFailed(ctx)
		err := conn.cc.Invoke(ctx, method, req, resp)
		if err == nil {
			return nil
		}
		if attempt >= attempts || status.Code(err) != codes.Unavailable || !retryWait(ctx, attempt) {
			return t.failure(c, budget, source, err)
		}
	}
}

// budgetContext is ctx bounded by the call's budget (budget): the caller's
// deadline as it is, else a timeout of the tool's or the gateway's; cancel
// must be called when the call ends. Every kind's call starts here.
func (t *ToolService) budgetContext(ctx context.Context, c *pipeline.Call) (_ context.Context, cancel context.CancelFunc, budget time.Duration, source string) {
	budget, source = t.budget(ctx, c)
	if source == deadlineCaller {
		return ctx, noCancel, budget, source
	}
	ctx, cancel = context.WithTimeout(ctx, budget)
	return ctx, cancel, budget, source
}

func noCancel() {}

// budget picks the call's deadline and names where it came from: the
// earliest of the caller's deadline, the tool's timeout and the gateway's
// maximum. A caller's deadline may not outlast the tool's timeout (the
// tool's owner set it); it does replace the gateway's default, which only
// applies when neither the caller nor the tool says anything.
func (t *ToolService) budget(ctx context.Context, c *pipeline.Call) (time.Duration, string) {
	budget, source := t.cfg.DefaultTimeout, deadlineDefault
	toolTimeout := c.Entry.Tool.Timeout
	if toolTimeout > 0 {
		budget, source = toolTimeout, deadlineTool
	}
	if d, ok := ctx.Deadline(); ok {
		if left := max(time.Until(d), 0); toolTimeout <= 0 || left <= budget {
			budget, source = left, deadlineCaller
		}
	}
	if m := t.cfg.MaxTimeout; m > 0 && m < budget {
		budget, source = m, deadlineMax
	}
	return budget, source
}

// failure classifies a failed backend call honestly: unreachable →
// Unavailable naming the tool, deadline → DeadlineExceeded naming the tool
// and the budget, cancellation → Canceled, anything else is the backend's
// own status (code and message; its details ride in Cause, without
// DebugInfo unless PassDebugInfo). Messages never name the backend's
// target, and an unreachable backend's transport message (which does) is
// not passed on: the target and the cause are for the logs (Cause).
func (t *ToolService) failure(c *pipeline.Call, budget time.Duration, source string, err error) *pipeline.Error {
	st := status.Convert(err)
	if !t.cfg.PassDebugInfo {
		err = withoutDebugInfo(st, err)
	}
	e := &pipeline.Error{Code: pipeline.Code(st.Code()), Reason: pipeline.ReasonBackendError, Tool: c.Tool,
		Message: st.Message(), Timeout: budget, DeadlineSource: source, Cause: err}
	switch {
	case errors.Is(err, context.Canceled) || st.Code() == codes.Canceled:
		e.Code, e.Reason, e.Message = pipeline.Canceled, pipeline.ReasonBackendCanceled, fmt.Sprintf("tool %q: call canceled", c.Tool)
	case errors.Is(err, context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
		e.Code, e.Reason = pipeline.DeadlineExceeded, pipeline.ReasonBackendDeadline
		e.Message = fmt.Sprintf("tool %q: backend did not answer within %v (%v)", c.Tool, budget.Round(time.Millisecond), source)
	case responseTooLarge(st):
		// Our receive limit, not the backend's failure: say which tool and
		// that it was the response. ResourceExhausted, gRPC's code for an
		// oversized message (Internal would blame a bug; the limit is
		// configured and named). No backend details pass on.
		return t.responseTooLarge(c)
	case st.Code() == codes.Unavailable:
		e.Reason = pipeline.ReasonBackendUnavailable
		e.Message = fmt.Sprintf("tool %q: backend unavailable; try again later", c.Tool)
	}
	return e
}

// debugInfoType is google.rpc.DebugInfo's Any type URL.
const debugInfoType = "type.googleapis.com/google.rpc.DebugInfo"

// withoutDebugInfo is err with st's DebugInfo details removed (err itself
// when it has none).
func withoutDebugInfo(st *status.Status, err error) error {
	p := st.Proto()
	kept := p.Details[:0]
	for _, d := range p.Details {
		if d.GetTypeUrl() != debugInfoType {
			kept = append(kept, d)
		}
	}
	if len(kept) == len(p.Details) {
		return err
	}
	p.Details = kept
	return status.FromProto(p).Err()
}

func (t *ToolService) outgoingMD(ctx context.Context, c *pipeline.Call) metadata.MD {
	md := metadata.MD{}
	if c.CallID != "" {
		md[MDCallID] = []string{c.CallID}
	}
	if c.Caller.Subject != "" {
		md[MDCaller] = []string{c.Caller.Subject}
	}
	if v, ok := bearer(ctx); ok {
		md[MDAuthorization] = []string{v}
	}
	// ValueFromIncomingContext copies only the wanted values, where
	// FromIncomingContext copies the whole incoming map on every call.
	copyMD(ctx, md, propagatedMD)
	if !t.cfg.TracePropagated {
		copyMD(ctx, md, traceMD)
	}
	return md
}

func copyMD(ctx context.Context, md metadata.MD, keys []string) {
	for _, k := range keys {
		if v := metadata.ValueFromIncomingContext(ctx, k); len(v) > 0 {
			md[k] = v
		}
	}
}

// callerProto is the caller identity sent to backends. The anonymous
// caller of "auth off" carries no roles: they are a gateway convenience,
// not something a backend should trust.
func callerProto(c *pipeline.Call) *gatewayv1.Caller {
	out := &gatewayv1.Caller{Subject: c.Caller.Subject, Method: c.Caller.Method}
	if c.Caller.Method != policy.MethodNone {
		out.Roles = c.Caller.Roles
	}
	return out
}

// callerField is callerProto(c) as InvokeRequest's caller field on its own,
// to follow a received request's bytes.
func callerField(c *pipeline.Call) ([]byte, error) {
	var roles []string
	if c.Caller.Method != policy.MethodNone {
		roles = c.Caller.Roles
	}
	return invokewire.CallerField(c.Caller.Subject, c.Caller.Method, roles)
}

// responseTooLarge is the error for a backend's response over the backend
// receive limit, whichever kind read it: ResourceExhausted naming the tool
// and the limit, nothing of the backend.
func (t *ToolService) responseTooLarge(c *pipeline.Call) *pipeline.Error {
	return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonBackendResponseTooLarge, Tool: c.Tool,
		Message: fmt.Sprintf("tool %q: the backend's response is over the gateway's limit of %d bytes for backend responses", c.Tool, t.cfg.MaxRecvMsgSize)}
}
