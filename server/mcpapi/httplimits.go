package mcpapi

// Bounded work per HTTP connection: how long a client may take to send a
// request, to take a response, to sit idle, and how many connections are
// served at once.
//
// Why per-request deadlines (http.ResponseController) rather than
// http.Server's ReadTimeout and WriteTimeout: both are fixed from the start
// of the request. ReadTimeout stays armed while the handler runs, and when
// it fires net/http's background read cancels the request's context — a tool
// call longer than it would be cancelled. WriteTimeout would end every
// response at a fixed age, so a subscriptions/listen stream (open for the
// life of the client) or a slow tool's answer would be cut. So the body gets
// a read deadline of its own, cleared once it has been read, and each write
// gets a deadline of its own: a client that does not take what it is sent
// is cut off, a stream that writes rarely is not.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/flowdrop/gateway/internal/httplimits"
	"github.com/flowdrop/gateway/internal/policy"
)

// HTTPLimits bound the MCP HTTP server's connections (httplimits.Limits,
// shared with the admin listener). Zero fields take the defaults.
type HTTPLimits = httplimits.Limits

// unauthenticatedPeekTimeout bounds how long a refused request's body is
// read for its audit line (or ReadTimeout, if shorter).
const unauthenticatedPeekTimeout = time.Second

// writeDeadlines gives every write of a response its own deadline.
func (m *Server) writeDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: m.limits.WriteTimeout}
		next.ServeHTTP(dw, r)
		dw.extend() // for net/http's own final flush
	})
}

// deadlineWriter sets a fresh write deadline before each write and flush.
// Unwrap lets http.ResponseController (the SDK flushes through one) reach
// the connection.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) extend() { _ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout)) }

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.extend()
	return d.ResponseWriter.Write(b)
}

func (d *deadlineWriter) FlushError() error {
	d.extend()
	return d.rc.Flush()
}

func (d *deadlineWriter) Flush() { _ = d.FlushError() }

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// readBody reads an authenticated POST's body whole, within ReadTimeout and
// the size bound, and refuses one that is not exactly one JSON value (the
// SDK's own decoder ignores what follows the first). The read deadline is
// cleared afterwards: the call itself may take as long as its budget. A
// task request is answered by tasks.go, a tools/call the fast path
// recognises there (fastpath.go);
// every other body goes on to next, the SDK's handler. The body's buffer is
// pooled: both read it only while they run.
func (m *Server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(m.limits.ReadTimeout))
		buf := getBuffer()
		defer putBuffer(buf)
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, int64(m.maxBody)))
		body := buf.Bytes()
		if err != nil {
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				m.refuseHTTP(w, r, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge, "body-too-large")
			case errors.Is(err, os.ErrDeadlineExceeded):
				m.refuseHTTP(w, r, fmt.Sprintf("request body not received within %v", m.limits.ReadTimeout), http.StatusRequestTimeout, "body-timeout")
			default:
				m.refuseHTTP(w, r, "request body could not be read", http.StatusBadRequest, "body-unreadable")
			}
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		if tr, ok := m.recogniseTask(r, body); ok {
			m.serveTask(w, r, tr)
			return
		}
		if env, ok := recogniseAnswer(body); ok {
			m.serveAnswer(w, r, env) // a caller's answer to a relayed request (relay.go)
			return
		}
		if fc, ok := m.fast.recogniseToolsCall(r, body); ok {
			m.serveFastCall(w, r, fc)
			return
		}
		if err := oneJSONValue(body); err != nil {
			noteRefusal(r, "malformed-payload")
			writeParseError(w, err)
			return
		}
		r, done := m.trackSDKRequest(r, body)
		defer done()
		r.Body = io.NopCloser(bytes.NewReader(body))
		w, r = withSessionMint(w, r, body) // session.go
		if m.isTasksInitialize(r, body) {
			m.serveTasksInitialize(w, r, next) // capabilities.tasks (taskcaps.go)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// closeWith answers code and closes the connection: net/http would
// otherwise read (up to 256 KiB of) an unread body to reuse it.
func closeWith(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// oneJSONValue reports what is wrong unless body is exactly one JSON value
// with only JSON whitespace around it.
func oneJSONValue(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return errors.New("not valid JSON")
	}
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 {
		return errors.New("data after the JSON-RPC message")
	}
	return nil
}

// writeParseError answers a body that is not exactly one JSON value as
// JSON-RPC does: HTTP 400 carrying a -32700 error with a null id (no id
// could be read). The detail is the decoder's, which quotes at most one
// character of the body.
func writeParseError(w http.ResponseWriter, err error) {
	msg, _ := json.Marshal("Parse error: malformed payload: " + policy.BoundTo(err.Error(), 256))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":`))
	_, _ = w.Write(msg)
	_, _ = w.Write([]byte("}}\n"))
}
