package mcpapi

// The MCP face's access log: one "finished call" line per MCP request, as
// the gRPC face writes one per call, at the same levels
// (observe.AccessLevel over the gateway's status code; a successful
// request at Config.OKCallsLevel, INFO by default).
//
//   - Every JSON-RPC method the SDK hands the gateway (initialize,
//     tools/list, tools/call, notifications, …) gets its line from the
//     receiving middleware (observe), when the method ends.
//   - A request refused at the HTTP level before any method ran (origin
//     403, authentication 401, a body too large, too slow or malformed, the
//     SDK's own 4xx) gets its line from the HTTP wrapper (accessLog) when the
//     response is done.
//
// The fields: protocol=mcp, mcp.method (bounded: the client names it),
// peer.address, mcp.start_time, flowdrop.caller and flowdrop.caller_method
// (the authenticated identity), flowdrop.tool, flowdrop.call_id and
// flowdrop.repairs (tools/call), flowdrop.outcome (ok, tool-error, error,
// as flowdrop_mcp_requests_total counts them), flowdrop.code (the status
// in the gRPC face's vocabulary, which picks the level), flowdrop.reason
// (the pipeline's reason, the same word an isError result carries in
// _meta flowdrop/reason, or the HTTP refusal's), mcp.error.code and
// mcp.error (a JSON-RPC error), http.status (HTTP-level lines), and
// mcp.time_ms.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpAccess is one HTTP request's access-log state, in its context.
type httpAccess struct {
	start time.Time
	peer  string
	// methodLogged: a method line was written for this request, so the
	// HTTP wrapper writes none.
	methodLogged atomic.Bool
	// Set by the HTTP middleware that refused the request: why, and what a
	// refused tools/call's peeked body named (auth.go).
	reason         string
	method         string
	tool, callID   string
	caller, authBy string
}

type httpAccessKey struct{}

func httpAccessFrom(ctx context.Context) *httpAccess {
	a, _ := ctx.Value(httpAccessKey{}).(*httpAccess)
	return a
}

// noteRefusal records why the HTTP middleware refused r (its access line's
// flowdrop.reason).
func noteRefusal(r *http.Request, reason string) {
	if a := httpAccessFrom(r.Context()); a != nil {
		a.reason = reason
	}
}

// noteRefusedCall records what a refused request's peeked body named.
func noteRefusedCall(r *http.Request, tool, callID string) {
	if a := httpAccessFrom(r.Context()); a != nil {
		a.method, a.tool, a.callID = "tools/call", tool, callID
	}
}

// refuseHTTP answers code with msg, closing the connection (the body stays
// unread), and records reason for the access line.
func (m *Server) refuseHTTP(w http.ResponseWriter, r *http.Request, msg string, code int, reason string) {
	noteRefusal(r, reason)
	closeWith(w, msg, code)
}

// accessLog is the outermost handler of the MCP path: it writes the line of
// a request that ended at the HTTP level with an error status and without
// a method line.
func (m *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := &httpAccess{start: time.Now(), peer: r.RemoteAddr}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), httpAccessKey{}, a)))
		if sw.status < http.StatusBadRequest || a.methodLogged.Load() {
			return
		}
		code := httpStatusCode(sw.status)
		level := observe.AccessLevel(code, m.okLevel)
		ctx := r.Context()
		if !m.log.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 14)
		attrs = append(attrs, slog.String("protocol", "mcp"))
		if a.method != "" {
			attrs = append(attrs, slog.String("mcp.method", a.method))
		}
		attrs = append(attrs, slog.String("http.method", policy.Bound(r.Method)), slog.String("peer.address", a.peer),
			slog.String("mcp.start_time", a.start.Format(time.RFC3339)))
		attrs = appendCaller(attrs, a.caller, a.authBy)
		attrs = appendCall(attrs, a.tool, a.callID, 0)
		attrs = append(attrs, slog.String("flowdrop.outcome", "error"), slog.String("flowdrop.code", code.String()))
		if a.reason != "" {
			attrs = append(attrs, slog.String("flowdrop.reason", a.reason))
		}
		attrs = append(attrs, slog.Int("http.status", sw.status), timeMS(a.start))
		m.log.LogAttrs(ctx, level, "finished call", attrs...)
	})
}

// observe is the receiving middleware's outer part: it counts the method
// (Config.CountRequest) and writes its access line.
func (m *Server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		var call *callAccess
		if method == "tools/call" {
			call = &callAccess{}
			ctx = context.WithValue(ctx, callAccessKey{}, call)
		}
		res, err := next(ctx, method, req)
		outcome := "ok"
		if err != nil {
			outcome = "error"
		} else if isToolError(res) {
			outcome = "tool-error"
		}
		if m.count != nil {
			label := method
			if !countedMethods[method] {
				label = "other"
			}
			m.count(label, outcome)
		}
		h := httpAccessFrom(ctx)
		if h != nil {
			h.methodLogged.Store(true)
		}
		m.logMethod(ctx, start, h, method, req, call, outcome, err)
		return res, err
	}
}

// isToolError reports whether res is a tools/call result with isError set.
func isToolError(res mcp.Result) bool {
	cr, ok := res.(*callResult)
	return ok && cr.IsError
}

// logMethod writes one method's access line.
func (m *Server) logMethod(ctx context.Context, start time.Time, h *httpAccess, method string, req mcp.Request,
	call *callAccess, outcome string, err error) {
	code, reason := pipeline.OK, ""
	switch {
	case call != nil && call.err != nil:
		code, reason = call.err.Code, string(call.err.Reason)
	case err != nil:
		code = rpcErrorCode(err)
	}
	level := observe.AccessLevel(code, m.okLevel)
	if !m.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("protocol", "mcp"), slog.String("mcp.method", policy.Bound(method)))
	if h != nil {
		attrs = append(attrs, slog.String("peer.address", h.peer))
	}
	attrs = append(attrs, slog.String("mcp.start_time", start.Format(time.RFC3339)))
	if b := pipeline.BundleFrom(ctx); b != "" {
		attrs = append(attrs, slog.String("mcp.bundle", b)) // the endpoint's (bundles.go)
	}
	if c, ok := policy.CallerFrom(ctx); ok {
		attrs = appendCaller(attrs, c.Subject, c.Method)
	}
	if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
		callID, _ := r.Params.Meta[MCPMetaCallID].(string)
		repairs := 0
		if call != nil {
			repairs = call.repairs
		}
		attrs = appendCall(attrs, r.Params.Name, callID, repairs)
	}
	attrs = append(attrs, slog.String("flowdrop.outcome", outcome), slog.String("flowdrop.code", code.String()))
	if reason != "" {
		attrs = append(attrs, slog.String("flowdrop.reason", reason))
	}
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			attrs = append(attrs, slog.Int64("mcp.error.code", je.Code))
		}
		attrs = append(attrs, slog.String("mcp.error", policy.Bound(err.Error())))
	}
	attrs = append(attrs, timeMS(start))
	m.log.LogAttrs(ctx, level, "finished call", attrs...)
}

func appendCaller(attrs []slog.Attr, subject, method string) []slog.Attr {
	if method == "" {
		return attrs
	}
	return append(attrs, slog.String("flowdrop.caller", policy.Bound(subject)), slog.String("flowdrop.caller_method", method))
}

func appendCall(attrs []slog.Attr, tool, callID string, repairs int) []slog.Attr {
	if tool != "" {
		attrs = append(attrs, slog.String("flowdrop.tool", policy.Bound(tool)))
	}
	if callID != "" {
		attrs = append(attrs, slog.String("flowdrop.call_id", policy.Bound(callID)))
	}
	if repairs > 0 {
		attrs = append(attrs, slog.Int("flowdrop.repairs", repairs))
	}
	return attrs
}

// timeMS is the duration as the gRPC line writes it (grpc.time_ms).
func timeMS(start time.Time) slog.Attr {
	return slog.String("mcp.time_ms", fmt.Sprintf("%v", float32(time.Since(start).Nanoseconds()/1000)/1000))
}

// rpcErrorCode is a method error's status in the gRPC face's vocabulary,
// for one that did not come from the pipeline: the client's mistakes are
// InvalidArgument or NotFound, a refusal PermissionDenied, a hang-up
// Canceled, anything else ours.
func rpcErrorCode(err error) pipeline.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return pipeline.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return pipeline.DeadlineExceeded
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return pipeline.Unknown
	}
	switch je.Code {
	case jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest, jsonrpc.CodeParseError:
		return pipeline.InvalidArgument
	case jsonrpc.CodeMethodNotFound:
		return pipeline.NotFound
	case MCPCodePermissionDenied, MCPCodeInputForbidden:
		return pipeline.PermissionDenied
	}
	return pipeline.Internal
}

// httpStatusCode is an HTTP refusal's status in the gRPC face's
// vocabulary (so its level follows the same rule).
func httpStatusCode(status int) pipeline.Code {
	switch status {
	case http.StatusUnauthorized:
		return pipeline.Unauthenticated
	case http.StatusForbidden:
		return pipeline.PermissionDenied
	case http.StatusNotFound:
		return pipeline.NotFound
	case http.StatusRequestTimeout:
		return pipeline.DeadlineExceeded
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return pipeline.ResourceExhausted
	case http.StatusServiceUnavailable:
		return pipeline.Unavailable
	}
	if status < http.StatusInternalServerError {
		return pipeline.InvalidArgument // 400, 405, 406, 415, …: a request the endpoint does not take
	}
	return pipeline.Internal
}

// statusWriter remembers the response's status. Unwrap lets
// http.ResponseController (flushes, deadlines) reach the connection.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// callAccess is what the pipeline recorded of a tools/call (CallRecorder).
type callAccess struct {
	err     *pipeline.Error
	repairs int
}

type callAccessKey struct{}

// CallRecorder is the pipeline recorder (pipeline.Config.Recorders) that
// hands a tools/call's outcome to its access line: the pipeline's status
// code and reason, and the repairs. It keeps nothing itself; on calls from
// other faces it does nothing.
type CallRecorder struct{}

// RecordCall implements pipeline.Recorder.
func (CallRecorder) RecordCall(ctx context.Context, c *pipeline.Call, o pipeline.Outcome) {
	if a, ok := ctx.Value(callAccessKey{}).(*callAccess); ok {
		a.err, a.repairs = o.Err, len(c.Report.Repairs)
	}
}

// RecordBackend implements pipeline.Recorder.
func (CallRecorder) RecordBackend(string, string, time.Duration) {}
