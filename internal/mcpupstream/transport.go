package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is how an upstream MCP server is spoken to over HTTP
// (registry.MCPTransport by the same names).
type Transport string

// The HTTP transports; connectHTTP's one switch chooses among them and
// refuses any other.
const (
	// TransportDetect is streamable HTTP, and the legacy HTTP+SSE
	// transport when the endpoint refuses the streamable initialize POST
	// with 400, 404 or 405 (the MCP specification's backward
	// compatibility: such a server answers GET with its event stream).
	TransportDetect Transport = ""
	// TransportStreamable is streamable HTTP (MCP 2025-03-26 and later).
	TransportStreamable Transport = "streamable_http"
	// TransportSSE is the legacy HTTP+SSE transport (MCP 2024-11-05): a
	// standing GET carries every message from the server, the first an
	// endpoint event naming where the client POSTs its own.
	TransportSSE Transport = "sse"
)

// ErrUnknownTransport is the error of a session asked of a transport this
// build does not know: nothing is sent.
var ErrUnknownTransport = errors.New("unknown MCP upstream transport")

// connectHTTP opens a session to url over o.Transport, presenting h on
// every request (to url's origin only, no redirect followed). caller is
// the session's Caller; over legacy SSE its calls go through the SDK.
func connectHTTP(ctx context.Context, url string, h Header, o ConnectOptions) (*Caller, error) {
	switch o.Transport {
	case TransportStreamable:
		return connectStreamable(ctx, url, HTTPClient(url, h, o.Base), o)
	case TransportSSE:
		return connectSSE(ctx, url, h, o)
	case TransportDetect:
		rec := &refusedPost{base: o.Base}
		c, err := connectStreamable(ctx, url, HTTPClient(url, h, rec), o)
		if err == nil || !rec.refused.Load() || ctx.Err() != nil {
			return c, err
		}
		// A fresh client: the streamable one's pool and state stay behind.
		if c, sseErr := connectSSE(ctx, url, h, o); sseErr == nil {
			return c, nil
		} else {
			return nil, fmt.Errorf("%w (and over legacy HTTP+SSE: %v)", err, sseErr)
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTransport, o.Transport)
}

// refusedPost notes whether a POST was answered 400, 404 or 405: the
// status by which a legacy HTTP+SSE server refuses a streamable initialize.
type refusedPost struct {
	base    http.RoundTripper
	refused atomic.Bool
}

func (r *refusedPost) RoundTrip(req *http.Request) (*http.Response, error) {
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			r.refused.Store(true)
		}
	}
	return resp, err
}

// connectSSE opens a session over the legacy HTTP+SSE transport. The
// stream is the session's, not the connecting request's: it outlives ctx
// (which bounds only connecting and initializing) and ends when the
// session closes. Each message on it is bounded by MaxResponseBytes (the
// SDK's 16 MiB when 0): a larger one ends the stream, and with it the
// session — there is no per-request budget on a shared stream, so a call's
// answer is measured once read (as over stdio; SDKBounded).
func connectSSE(ctx context.Context, url string, h Header, o ConnectOptions) (*Caller, error) {
	t := &mcp.SSEClientTransport{Endpoint: url, HTTPClient: HTTPClient(url, h, o.Base)}
	if o.MaxResponseBytes > 0 {
		t.MaxEventSize = int(min(o.MaxResponseBytes+1, 1<<30))
	}
	var st mcp.Transport = sessionStream{t}
	if o.OnToolExecution != nil {
		// Its connection is already wrapped (closeCancels): the SDK asks
		// nothing of it beyond mcp.Connection, as over stdio.
		st = executionTransport{t: st, tell: o.OnToolExecution}
	}
	side := &sideTransport{t: oneStream(st, &o)}
	cs, err := connect(ctx, side, o)
	if err != nil {
		return nil, err
	}
	return &Caller{Session: cs, endpoint: url, sdk: true, legacySSE: true, side: side.made}, nil
}

// sessionStream connects t with a stream that lives as long as the
// connection: the SDK's SSE client makes its standing GET with the context
// it connects under, which for the gateway is one call's.
type sessionStream struct{ t mcp.Transport }

func (s sessionStream) Connect(ctx context.Context) (mcp.Connection, error) {
	// Background, not WithoutCancel(ctx): the call's values (its response
	// budget above all) must not bind the session's stream.
	streamCtx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	conn, err := s.t.Connect(streamCtx)
	if !stop() {
		// ctx ended while connecting: so does the stream.
		if conn != nil {
			_ = conn.Close()
		}
		cancel()
		if err == nil {
			err = context.Cause(ctx)
		}
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return closeCancels{Connection: conn, cancel: cancel}, nil
}

// closeCancels ends the stream's context when the connection closes.
type closeCancels struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c closeCancels) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
