package mcpupstreamtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Request is a request as a server received it.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         string
}

// recordRequest reads r's body (at most 1 MiB) and keeps it with the rest.
func recordRequest(r *http.Request) Request {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)}
}

// Recorder is an HTTP server on 127.0.0.1 that records every request and
// answers each 404: where a redirect that must not be followed points.
type Recorder struct {
	// URL is the server's base URL ("http://127.0.0.1:PORT").
	URL  string
	mu   sync.Mutex
	reqs []Request
}

// StartRecorder runs a Recorder until the test ends.
func StartRecorder(t testing.TB) *Recorder {
	t.Helper()
	rec := &Recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := recordRequest(r)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, req)
		rec.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// Requests are the requests received, in order.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

type redirect struct {
	to      string
	methods []string // JSON-RPC methods redirected; none: every request
}

// Redirect answers requests with 307 Temporary Redirect to `to` from now
// on: those of the JSON-RPC methods given (e.g. "tools/call": a session is
// made, and the call itself — its arguments, with the credential — is
// redirected), or every request when none is given (a new session's
// initialize first). An empty `to` stops redirecting.
func (s *Server) Redirect(to string, methods ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirect = nil
	if to != "" {
		s.redirect = &redirect{to: to, methods: methods}
	}
}

// redirected answers r with Redirect's redirect when it applies; r's body
// is left for the handler otherwise.
func (s *Server) redirected(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	rd := s.redirect
	s.mu.Unlock()
	if rd == nil {
		return false
	}
	if len(rd.methods) > 0 {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(b, &msg) != nil || !slices.Contains(rd.methods, msg.Method) {
			return false
		}
	}
	http.Redirect(w, r, rd.to, http.StatusTemporaryRedirect)
	return true
}

// Stray are the requests received on other paths than the endpoint's
// (/mcp), in order: a redirect within the server's origin followed.
func (s *Server) Stray() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.stray...)
}
