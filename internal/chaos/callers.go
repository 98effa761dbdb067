package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// The two faces a caller uses.
const (
	FaceGRPC = "grpc"
	FaceMCP  = "mcp"
)

// Outcome is one call attempt as its caller saw it.
type Outcome struct {
	Face    string
	Replica int
	Tool    string
	CallID  string
	Key     string // the idempotency key, if the call had one
	Began   time.Time
	Code    string // "OK", a gRPC code (with its ErrorInfo reason), or the MCP answer's kind
	OK      bool
	Wrong   string // what was wrong with an OK answer ("" when right)
	By      string // the backend that answered (balanced tools)
}

// callTimeout is each attempt's deadline.
const callTimeout = 5 * time.Second

// Callers drive the fleet: gRPC and MCP workers, each call to the next
// replica in one client-side round robin.
type Callers struct {
	fleet   *Fleet
	conns   []*grpc.ClientConn
	next    atomic.Uint64
	seq     atomic.Uint64
	pause   time.Duration
	keyed   float64       // share of calls with an idempotency key
	retry   time.Duration // how long a keyed call is retried
	limited float64       // share of calls to echo_limited
	mcpTool float64       // share of calls to mcp_echo
	mu      sync.Mutex
	out     []Outcome
	// keys are the idempotency keys used, with the tool each went to.
	keys map[string]string
}

func newCallers(f *Fleet, cfg Config) (*Callers, error) {
	c := &Callers{fleet: f, pause: cfg.Pause, keyed: cfg.KeyedShare, retry: cfg.KeyRetry,
		limited: cfg.LimitedShare, mcpTool: cfg.MCPToolShare, keys: map[string]string{}}
	for _, r := range f.Replicas {
		// A replica that comes back is dialled again within half a second:
		// the recovery times measure the gateway, not the client's back-off.
		conn, err := grpc.NewClient(r.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond,
				Multiplier: 1.6, MaxDelay: 500 * time.Millisecond}, MinConnectTimeout: 2 * time.Second}))
		if err != nil {
			return nil, err
		}
		c.conns = append(c.conns, conn)
	}
	return c, nil
}

func (c *Callers) close() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// run starts workers (even: gRPC, odd: MCP) until ctx ends.
func (c *Callers) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			face := FaceGRPC
			if w%2 == 1 {
				face = FaceMCP
			}
			c.worker(ctx, w, face)
		}()
	}
	wg.Wait()
}

func (c *Callers) worker(ctx context.Context, w int, face string) {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	mcpc := &mcpClients{sessions: make([]*mcp.ClientSession, len(c.fleet.Replicas))}
	defer mcpc.close()
	for ctx.Err() == nil {
		tool := toolEcho
		switch p := rng.Float64(); {
		case p < c.limited:
			tool = toolLimited
		case p < c.limited+c.mcpTool:
			tool = toolMCP
		}
		key := ""
		if tool != toolLimited && rng.Float64() < c.keyed {
			key = fmt.Sprintf("k-%d-%d", w, c.seq.Add(1))
			c.mu.Lock()
			c.keys[key] = tool
			c.mu.Unlock()
		}
		n := rng.Int64N(1 << 40)
		id := key
		if id == "" {
			id = fmt.Sprintf("r-%d-%d", w, c.seq.Add(1))
		}
		// A keyed call is retried, with the same key and arguments, until
		// it succeeds or its retry window ends; any other call is tried once.
		end := time.Now().Add(c.retry)
		for attempt := 0; ; attempt++ {
			o := c.call(ctx, mcpc, face, tool, id, key, n, attempt)
			c.mu.Lock()
			c.out = append(c.out, o)
			c.mu.Unlock()
			if key == "" || o.OK || time.Now().After(end) || ctx.Err() != nil {
				break
			}
			sleep(ctx, 100*time.Millisecond)
		}
		sleep(ctx, c.pause)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (c *Callers) call(ctx context.Context, mcpc *mcpClients, face, tool, id, key string, n int64, attempt int) Outcome {
	r := int(c.next.Add(1) % uint64(len(c.conns)))
	o := Outcome{Face: face, Replica: r, Tool: tool, Key: key, Began: time.Now(),
		CallID: fmt.Sprintf("%s-%s-a%d", face, id, attempt)}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	if face == FaceGRPC {
		c.callGRPC(cctx, &o, id, n)
	} else {
		mcpc.call(cctx, c.fleet.Replicas[r].MCPURL, r, &o, id, n)
	}
	return o
}

func (c *Callers) callGRPC(ctx context.Context, o *Outcome, id string, n int64) {
	args, _ := structpb.NewStruct(map[string]any{"id": id, "n": float64(n)})
	resp, err := gatewayv1.NewToolGatewayServiceClient(c.conns[o.Replica]).InvokeTool(ctx,
		&gatewayv1.InvokeToolRequest{Tool: o.Tool, Arguments: args, CallId: o.CallID, IdempotencyKey: o.Key})
	if err != nil {
		o.Code = grpcCode(err)
		return
	}
	o.OK, o.Code = true, "OK"
	if resp.GetIsError() {
		o.OK, o.Code = false, "is_error"
		return
	}
	if o.Tool == toolMCP {
		if got, want := resp.GetResult().GetStringValue(), mcpAnswer(id, n); got != want {
			o.Wrong = fmt.Sprintf("%s: result %q, want %q", o.CallID, got, want)
		}
		return
	}
	f := resp.GetResult().GetStructValue().GetFields()
	o.By = f["by"].GetStringValue()
	if f["id"].GetStringValue() != id || int64(f["n2"].GetNumberValue()) != answerOf(n) {
		o.Wrong = fmt.Sprintf("%s: result %v, want id %s n2 %d", o.CallID, resp.GetResult().AsInterface(), id, answerOf(n))
	}
}

// grpcCode names a refusal by its code and, when the gateway sent one, the
// ErrorInfo reason.
func grpcCode(err error) string {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Code().String() + "/" + info.GetReason()
		}
	}
	if st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded {
		return st.Code().String() + "/transport"
	}
	return st.Code().String()
}

// mcpClients is one worker's go-sdk sessions, one per replica, opened on
// first use and again after a transport failure.
type mcpClients struct {
	sessions []*mcp.ClientSession
}

// rejectedByTransport is the go-sdk's jsonrpc2.ErrRejected code.
const rejectedByTransport = -32005

var mcpHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}

func (m *mcpClients) close() {
	for _, s := range m.sessions {
		if s != nil {
			_ = s.Close()
		}
	}
}

func (m *mcpClients) call(ctx context.Context, url string, r int, o *Outcome, id string, n int64) {
	if m.sessions[r] == nil {
		cl := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-chaos", Version: "1"}, nil)
		s, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: mcpHTTP,
			MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			o.Code = "transport"
			return
		}
		m.sessions[r] = s
	}
	meta := mcp.Meta{"flowdrop/call_id": o.CallID}
	if o.Key != "" {
		meta["flowdrop/idempotency_key"] = o.Key
	}
	res, err := m.sessions[r].CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: o.Tool,
		Arguments: map[string]any{"id": id, "n": n}})
	if err != nil {
		// The go-sdk client reports a failed HTTP exchange (the replica
		// down, or restarted without the session) as ErrRejected: a
		// transport failure, after which the session is opened again.
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code != rejectedByTransport {
			o.Code = fmt.Sprintf("jsonrpc %d", werr.Code)
			return
		}
		o.Code = "transport"
		_ = m.sessions[r].Close()
		m.sessions[r] = nil
		return
	}
	if res.IsError {
		reason, _ := res.Meta["flowdrop/reason"].(string)
		o.Code = "is_error/" + reason
		return
	}
	o.OK, o.Code = true, "OK"
	if o.Tool == toolMCP {
		got := ""
		if len(res.Content) == 1 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				got = tc.Text
			}
		}
		if want := mcpAnswer(id, n); got != want {
			o.Wrong = fmt.Sprintf("%s: content %q, want %q", o.CallID, got, want)
		}
		return
	}
	var v struct {
		ID string `json:"id"`
		N2 int64  `json:"n2"`
		By string `json:"by"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil || v.ID != id || v.N2 != answerOf(n) {
		o.Wrong = fmt.Sprintf("%s: structuredContent %s, want id %s n2 %d", o.CallID, b, id, answerOf(n))
	}
	o.By = v.By
}

func (c *Callers) outcomes() []Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Outcome(nil), c.out...)
}
