package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// Every tool of the soak answers from its request alone, so a caller can
// tell a right answer from a wrong or mixed-up one: the request's id back,
// and its n as 2n+1.
func answerOf(n int64) int64 { return 2*n + 1 }

// runs counts how often each request id ran on a backend: an idempotency
// key's id runs once, whatever the retries.
type runs struct {
	mu    sync.Mutex
	count map[string]int
	first map[string]time.Time
}

func newRuns() *runs { return &runs{count: map[string]int{}, first: map[string]time.Time{}} }

func (r *runs) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count[id] == 0 {
		r.first[id] = time.Now()
	}
	r.count[id]++
}

// get returns how often id ran and when it first did.
func (r *runs) get(id string) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[id], r.first[id]
}

// Backend is one ToolBackendService address. Stop and Restart take it
// away and bring it back on the same address.
type Backend struct {
	Name string
	Addr string
	runs *runs
	mu   sync.Mutex
	srv  *grpc.Server
}

func startBackend(name string, r *runs, tools ...string) (*Backend, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Backend{Name: name, Addr: lis.Addr().String(), runs: r}
	b.serve(lis, tools)
	return b, nil
}

func (b *Backend) serve(lis net.Listener, tools []string) {
	var opts []demotools.Option
	for _, tool := range tools {
		opts = append(opts, demotools.WithHandler(tool, b.echo))
	}
	srv := demotools.NewGRPCServer(demotools.New(opts...), nil)
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(lis)
}

func (b *Backend) echo(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	f := req.GetArguments().GetFields()
	id, n := f["id"].GetStringValue(), int64(f["n"].GetNumberValue())
	b.runs.add(id)
	res, err := structpb.NewStruct(map[string]any{"id": id, "n2": float64(answerOf(n)), "by": b.Name})
	if err != nil {
		return nil, err
	}
	return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(res)}, nil
}

// Stop closes the address. GracefulStop lets calls that already ran send
// their answers, so a run the gateway never heard of (which it may then
// run again: a transport failure is not an idempotent outcome) is not
// counted against idempotency.
func (b *Backend) Stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		srv.GracefulStop()
	}
}

// Restart serves the address again.
func (b *Backend) Restart(tools ...string) error {
	var lis net.Listener
	var err error
	for range 50 { // the port is ours; the kernel may take a moment to free it
		if lis, err = net.Listen("tcp", b.Addr); err == nil {
			b.serve(lis, tools)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("backend %s: listen again on %s: %w", b.Name, b.Addr, err)
}

// Upstream is the MCP upstream: a go-sdk server over streamable HTTP with
// one tool, echo, answering "id:2n+1" as text.
type Upstream struct {
	URL  string
	runs *runs
	srv  *http.Server
}

// upstreamTool is the upstream's own name for its tool.
const upstreamTool = "echo"

type echoArgs struct {
	ID string `json:"id"`
	N  int64  `json:"n"`
}

func startUpstream(r *runs) (*Upstream, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &Upstream{URL: "http://" + lis.Addr().String() + "/mcp", runs: r}
	s := mcp.NewServer(&mcp.Implementation{Name: "flowdrop-chaos-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: upstreamTool, Description: "Answers id:2n+1."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			r.add(a.ID)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: mcpAnswer(a.ID, a.N)}}}, nil, nil
		})
	u.srv = &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ReadHeaderTimeout: 5 * time.Second}
	go u.srv.Serve(lis)
	return u, nil
}

func mcpAnswer(id string, n int64) string { return fmt.Sprintf("%s:%d", id, answerOf(n)) }

// Close stops the upstream.
func (u *Upstream) Close() { _ = u.srv.Close() }
