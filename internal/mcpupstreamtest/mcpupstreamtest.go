// Package mcpupstreamtest runs a real go-sdk MCP server over streamable
// HTTP on 127.0.0.1, for tests of the gateway's MCP-tool kind and its
// import: the arguments and credential headers it received are recorded.
package mcpupstreamtest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Item is one element of add_items' argument.
type Item struct {
	Title string `json:"title"`
}

// AddItemsIn is add_items' input; AddItemsOut its structured result.
type AddItemsIn struct {
	Items []Item `json:"items"`
}

type AddItemsOut struct {
	Count  int      `json:"count"`
	Titles []string `json:"titles"`
}

// SayIn is "say hello"'s input (a name with a space: the import maps it).
type SayIn struct {
	Name string `json:"name"`
}

// Server is the upstream.
type Server struct {
	// URL is the streamable-HTTP endpoint.
	URL string
	// MCP is the go-sdk server, to add or remove tools while running.
	MCP *mcp.Server

	http *httptest.Server
	mu   sync.Mutex
	args []json.RawMessage // tools/call arguments as received, in order
	auth []string          // each request's credential header, in order
	gets int               // standing GET streams opened (notification listeners)
	off  bool              // DontRecord
	// redirect, when set, answers requests with a 307 to redirect.to
	// (Redirect); stray records requests to other paths than /mcp.
	redirect *redirect
	stray    []Request

	accepted  atomic.Int64  // TCP connections accepted (Accepted)
	closing   chan struct{} // closed by Close: "wait" answers
	closeOnce sync.Once
}

// Accepted is how many TCP connections the server has accepted: a client
// that reuses its connections opens few.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// DontRecord stops recording arguments and credentials (benchmarks).
func (s *Server) DontRecord() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.off = true
}

// CredentialHeader is the header the server records (set by the test's
// credential line, e.g. "X-Upstream-Key: …"), besides Authorization.
const CredentialHeader = "X-Upstream-Key"

// Start runs the upstream until the test ends (or Close).
func Start(t testing.TB) *Server { return start(t, false) }

// StartTLS is Start serving https, its certificate from Certificate.
func StartTLS(t testing.TB) *Server { return start(t, true) }

// Certificate is the https server's certificate (nil for plain http).
func (s *Server) Certificate() *x509.Certificate { return s.http.Certificate() }

func start(t testing.TB, tls bool) *Server {
	t.Helper()
	s := newServer()
	s.http = httptest.NewUnstartedServer(s.handler())
	s.http.Listener = &countingListener{Listener: s.http.Listener, n: &s.accepted}
	if tls {
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// ServeStdio serves the same tools over this process's stdin and stdout
// until stdin ends (a test binary run as a stdio MCP server), and returns
// the exit code.
func ServeStdio() int {
	s := newServer()
	s.off = true
	if err := s.MCP.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// newServer is the go-sdk server with the tools, not yet serving.
func newServer() *Server {
	s := &Server{MCP: mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil), closing: make(chan struct{})}
	mcp.AddTool(s.MCP, &mcp.Tool{Name: "add_items", Description: "Adds items."},
		func(_ context.Context, req *mcp.CallToolRequest, in AddItemsIn) (*mcp.CallToolResult, AddItemsOut, error) {
			s.record(req)
			out := AddItemsOut{Count: len(in.Items), Titles: []string{}}
			for _, it := range in.Items {
				out.Titles = append(out.Titles, it.Title)
			}
			return nil, out, nil
		})
	mcp.AddTool(s.MCP, &mcp.Tool{Name: "say hello", Description: "Greets."},
		func(_ context.Context, req *mcp.CallToolRequest, in SayIn) (*mcp.CallToolResult, any, error) {
			s.record(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}, &mcp.TextContent{Text: in.Name}}}, nil, nil
		})
	mcp.AddTool(s.MCP, &mcp.Tool{Name: "refuse", Description: "Always a tool error."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.record(req)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "upstream says no"}}}, nil, nil
		})
	mcp.AddTool(s.MCP, &mcp.Tool{Name: "wait", Description: "Answers when the call is cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-s.closing:
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "too late"}}}, nil, nil
		})
	return s
}

// handler is a fresh streamable-HTTP handler (no sessions) recording the
// credential headers; it serves /mcp only, answering Redirect's redirects,
// and records a request to another path (Stray) with a 404.
func (s *Server) handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			req := recordRequest(r)
			s.mu.Lock()
			s.stray = append(s.stray, req)
			s.mu.Unlock()
			http.NotFound(w, r)
			return
		}
		if s.redirected(w, r) {
			return
		}
		s.mu.Lock()
		if !s.off {
			s.auth = append(s.auth, r.Header.Get("Authorization")+r.Header.Get(CredentialHeader))
		}
		if r.Method == http.MethodGet {
			s.gets++
		}
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Restart stops the server and starts it again on the same address with
// no sessions, as an upstream process restarting does.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	addr := s.http.Listener.Addr().String()
	s.Close()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("re-listening on %s: %v", addr, err)
	}
	s.http = &httptest.Server{Listener: &countingListener{Listener: lis, n: &s.accepted}, Config: &http.Server{Handler: s.handler()}}
	s.http.Start()
}

func (s *Server) record(req *mcp.CallToolRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.off {
		s.args = append(s.args, append(json.RawMessage(nil), req.Params.Arguments...))
	}
}

// Args are the tools/call arguments received, in order.
func (s *Server) Args() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.args...)
}

// Credentials are the credential headers of the requests received, in
// order ("" for a request without one).
func (s *Server) Credentials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Listeners is how many standing GET streams (for notifications) clients
// opened.
func (s *Server) Listeners() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// Close stops the server: later connections are refused ("wait" answers
// at once from then on, also after Restart).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.http.CloseClientConnections()
	s.http.Close()
	var open []*mcp.ServerSession
	for ss := range s.MCP.Sessions() { // sessions whose clients never said goodbye
		open = append(open, ss)
	}
	for _, ss := range open {
		_ = ss.Close()
	}
}
