package loadgen

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EchoTool is the MCP upstream's one tool: it answers with the arguments it
// was sent.
const EchoTool = "echo"

// EchoUpstream is the MCP harness's upstream (issue 30): a go-sdk MCP server
// over streamable HTTP (stateful sessions, the SDK's defaults) offering
// EchoTool. It counts the TCP connections its listener accepts and the
// tools/call requests it answers, so the harness can say how many new
// upstream connections a proxy in front of it opens per call.
type EchoUpstream struct {
	accepted atomic.Int64
	calls    atomic.Int64
	handler  http.Handler
}

// EchoStats is what EchoUpstream.Stats reports (and its /stats serves).
type EchoStats struct {
	Accepted int64 `json:"accepted"` // TCP connections accepted on the MCP listener
	Calls    int64 `json:"calls"`    // echo calls answered
}

// NewEchoUpstream returns the upstream; Serve puts it on a listener.
func NewEchoUpstream() *EchoUpstream {
	u := &EchoUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "flowdrop-bench-echo", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{
		Name:        EchoTool,
		Description: "Benchmark upstream: answers with its arguments as canonical JSON.",
		InputSchema: BenchToolSchema(),
	}, u.echo)
	u.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return u
}

// echo answers with one text block: the arguments as EchoText encodes them,
// so the driver checks an answer with one byte comparison whichever proxy
// re-encoded the arguments on the way.
func (u *EchoUpstream) echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	u.calls.Add(1)
	text, err := EchoText(req.Params.Arguments)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments are not JSON"}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// EchoText is the canonical JSON of raw: decoded and encoded again with
// encoding/json (object keys sorted, numbers as float64), so equal values
// give equal text however they were spelt on the wire.
func EchoText(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Handler is the MCP endpoint (streamable HTTP), on any path.
func (u *EchoUpstream) Handler() http.Handler { return u.handler }

// Stats reads the counters.
func (u *EchoUpstream) Stats() EchoStats {
	return EchoStats{Accepted: u.accepted.Load(), Calls: u.calls.Load()}
}

// StatsHandler serves Stats as JSON, for a listener of its own: a scrape
// must not open a connection the MCP listener would count.
func (u *EchoUpstream) StatsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u.Stats())
	})
}

// CountAccepts wraps lis so every connection it accepts is counted.
func (u *EchoUpstream) CountAccepts(lis net.Listener) net.Listener {
	return &countingListener{Listener: lis, n: &u.accepted}
}

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
