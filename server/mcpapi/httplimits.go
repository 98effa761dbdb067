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
)

// HTTPLimits bound the MCP HTTP server's connections. Zero fields take the
// defaults below.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, from the end of its
	// headers (408 and the connection closed past it).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response (a stream's event, a
	// result); a client that does not read is cut off.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxConnections caps the connections served at once; more wait to be
	// accepted.
	MaxConnections int
}

// The defaults of HTTPLimits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConnections    = 1024
)

// withDefaults fills the zero fields.
func (l HTTPLimits) withDefaults() HTTPLimits {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&l.ReadTimeout, DefaultReadTimeout)
	set(&l.WriteTimeout, DefaultWriteTimeout)
	set(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	return l
}

// Validate names every negative field.
func (l HTTPLimits) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read_header_timeout", l.ReadHeaderTimeout}, {"read_timeout", l.ReadTimeout}, {"write_timeout", l.WriteTimeout}, {"idle_timeout", l.IdleTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("mcp %s must not be negative, got %v", d.name, d.v))
		}
	}
	if l.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("mcp max_connections must not be negative, got %d", l.MaxConnections))
	}
	return errors.Join(errs...)
}

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
// cleared afterwards: the call itself may take as long as its budget.
func (m *Server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(m.limits.ReadTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(m.maxBody)))
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
		if err := oneJSONValue(body); err != nil {
			noteRefusal(r, "malformed-payload")
			http.Error(w, "malformed payload: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
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
