package mcpupstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// ErrResponseTooLarge is the cause a WithResponseLimit context is cancelled
// with when the upstream's responses cross the limit.
var ErrResponseTooLarge = errors.New("the upstream's response is over the limit")

// WithResponseLimit returns a context under which the HTTP responses a
// session reads for requests made with it (a tools/call's POST, and any
// stream the SDK resumes for that call) share a budget of max bytes. Reading
// past it fails, and the context is cancelled with ErrResponseTooLarge, so
// the call ends at once however the SDK reads the response — a JSON body
// it reads whole, or an event stream — and no more of it is read.
// Requests made without it are not limited, nor is a session's standing
// stream (standingStream). stop releases the context.
func WithResponseLimit(ctx context.Context, max int64) (_ context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	l := &responseLimit{cancel: cancel}
	l.left.Store(max)
	return context.WithValue(ctx, responseLimitKey{}, l), func() { cancel(nil) }
}

type responseLimitKey struct{}

type responseLimit struct {
	left   atomic.Int64 // bytes the call's responses may still carry
	cancel context.CancelCauseFunc
}

// limitResponses caps the bodies of responses to requests made under a
// WithResponseLimit context.
type limitResponses struct{ base http.RoundTripper }

func (t limitResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if standingStream(req) {
		return resp, nil
	}
	if l, ok := req.Context().Value(responseLimitKey{}).(*responseLimit); ok {
		resp.Body = &cappedBody{ReadCloser: resp.Body, l: l}
	}
	return resp, nil
}

// standingStream: req opens a session's standing stream — streamable
// HTTP's notification stream, legacy SSE's one stream — a GET without
// Last-Event-ID (the SDK resuming a call's stream sends one). The SDK
// makes it under the context of the request that made the session, whose
// values a connection keeps; the stream outlives that request and is not
// its response: its events are bounded one by one (MaxEventSize), not by
// a request's budget, which it would otherwise use up and then fail the
// session on.
func standingStream(req *http.Request) bool {
	return req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") == ""
}

type cappedBody struct {
	io.ReadCloser
	l    *responseLimit
	over bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrResponseTooLarge
	}
	// At most one byte past the budget: enough to know it was crossed.
	if left := b.l.left.Load(); int64(len(p)) > left+1 {
		p = p[:max(left+1, 1)]
	}
	n, err := b.ReadCloser.Read(p)
	if left := b.l.left.Add(-int64(n)); left < 0 {
		b.over = true
		b.l.cancel(ErrResponseTooLarge)
		return 0, ErrResponseTooLarge
	}
	return n, err
}
