package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over stdio and legacy HTTP+SSE an upstream's requests for input
// (elicitation/create, sampling/createMessage) share one stream with
// everything else, and neither the go-sdk nor the TypeScript SDK says in
// such a request which call caused it. A request is relayed only to a
// call it provably belongs to: the one request the gateway has in flight
// on that connection (sent, not yet answered by the upstream). Every
// request counts — a call with no caller to ask (gRPC, no face session),
// the gateway's own listings — and so does a call the gateway gave up on
// until the upstream answers it, since its handler may still be running;
// with more than one in flight the request is refused
// (CodeInputUnattributed), never guessed. attributedConn reads and writes
// the connection through to know what is in flight, and answers the
// upstream's requests for input itself: the SDK's handlers see its
// context, not the call's.

// CodeInputUnattributed is the JSON-RPC error an upstream gets for a
// request for input on a stdio or legacy SSE connection that the gateway
// cannot attribute to exactly one of its calls.
const CodeInputUnattributed = -32014

// Bounds on a connection's requests for input.
const (
	// maxQueuedInput is how many requests for input of one call wait to be
	// asked (they are asked one at a time); more are refused.
	maxQueuedInput = 4
	// answerWriteWait bounds writing an answer (over legacy SSE, a POST).
	answerWriteWait = 10 * time.Second
	// refusalWriters is how many refusals are written off the reading
	// goroutine at once; past it the reader writes them itself, so an
	// upstream flooding requests is slowed, not given goroutines.
	refusalWriters = 8
)

// attributedTransport is t read and written through attributedConn.
type attributedTransport struct{ t mcp.Transport }

func (a attributedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &attributedConn{Connection: c, inFlight: map[any]*sentRequest{}, writers: make(chan struct{}, refusalWriters)}, nil
}

// sentRequest is a request the gateway wrote and the upstream has not
// answered; asker is its call's (nil: nobody to ask).
type sentRequest struct {
	asker *asker
	// task is the upstream task a tasks/result is for ("" for any other
	// request): a request for input naming that task (related-task) is
	// its, however many others are in flight.
	task string
	// abandoned: the gateway sent notifications/cancelled for it.
	abandoned bool
}

type attributedConn struct {
	mcp.Connection
	mu       sync.Mutex
	inFlight map[any]*sentRequest // by the request's ID (ID.Raw)
	writers  chan struct{}        // refusals being written (refusalWriters)
}

func (c *attributedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			c.abandon(req.Params)
		}
		return c.Connection.Write(ctx, msg)
	}
	// In flight before it is written: its answer may be read before Write
	// returns.
	id := req.ID.Raw()
	c.mu.Lock()
	c.inFlight[id] = &sentRequest{asker: askerFrom(ctx), task: resultTask(req)}
	c.mu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		c.mu.Lock()
		delete(c.inFlight, id)
		c.mu.Unlock()
	}
	return err
}

// abandon marks the request a notifications/cancelled names as given up.
func (c *attributedConn) abandon(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	if r := c.inFlight[id.Raw()]; r != nil {
		r.abandoned = true
	}
	c.mu.Unlock()
}

func (c *attributedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			c.mu.Lock()
			if r := c.inFlight[m.ID.Raw()]; r != nil {
				delete(c.inFlight, m.ID.Raw())
				if r.asker != nil {
					r.asker.answered()
				}
			}
			c.mu.Unlock()
		case *jsonrpc.Request:
			if m.IsCall() && (m.Method == "elicitation/create" || m.Method == "sampling/createMessage") {
				c.input(m)
				continue
			}
		}
		return msg, nil
	}
}

// input answers the upstream's request for input m: asked of the one call
// it can belong to, else refused.
func (c *attributedConn) input(m *jsonrpc.Request) {
	a, refusal := c.attribute(m.Method, relatedTask(m.Params))
	if refusal != nil {
		// Off the reader when it can be: over legacy SSE a write is a POST,
		// which the upstream may answer only once its stream is read.
		select {
		case c.writers <- struct{}{}:
			go func() {
				defer func() { <-c.writers }()
				c.answer(m.ID, nil, refusal)
			}()
		default:
			c.answer(m.ID, nil, refusal)
		}
		return
	}
	// Asked off the reading goroutine: the caller may take minutes, and
	// the connection carries everything else meanwhile.
	go func() {
		res, err := a.ask(m.ID, m.Method, m.Params)
		if errors.Is(err, ErrAnswerLater) {
			return // answered by AnswerRequest (a task's, from any POST)
		}
		c.answer(m.ID, res, err)
	}()
}

// attribute is the call whose asker m is asked of, or the refusal.
func (c *attributedConn) attribute(method, task string) (*asker, error) {
	refuse := func(code int64, format string, args ...any) (*asker, error) {
		return nil, &jsonrpc.Error{Code: code, Message: method + ": " + fmt.Sprintf(format, args...)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var only *sentRequest
	if task != "" {
		// A task's request: the tasks/result in flight for that task, when
		// there is exactly one, whatever else is in flight.
		n := 0
		for _, r := range c.inFlight {
			if r.task == task {
				only, n = r, n+1
			}
		}
		if n == 1 && !only.abandoned && only.asker != nil && !only.asker.isDone() {
			if !only.asker.queue() {
				return refuse(jsonrpc.CodeInvalidRequest, "the call already has %d requests for input waiting, the gateway's bound", maxQueuedInput)
			}
			return only.asker, nil
		}
		only = nil
	}
	switch n := len(c.inFlight); n {
	case 0:
		return refuse(jsonrpc.CodeMethodNotFound, "no request of the gateway is in flight on this connection, so no caller is there to ask")
	case 1:
		for _, r := range c.inFlight {
			only = r
		}
	default:
		gaveUp := 0
		for _, r := range c.inFlight {
			if r.abandoned || (r.asker != nil && r.asker.isDone()) {
				gaveUp++
			}
		}
		if gaveUp > 0 {
			return refuse(CodeInputUnattributed, "ambiguous: %d requests of the gateway are in flight on this connection (%d of them given up and not yet answered by the upstream), and this transport does not say which one asks", n, gaveUp)
		}
		return refuse(CodeInputUnattributed, "ambiguous: %d requests of the gateway are in flight on this connection, and this transport does not say which one asks", n)
	}
	switch {
	case only.abandoned || (only.asker != nil && only.asker.isDone()):
		return refuse(CodeInputUnattributed, "the only request of the gateway in flight on this connection was given up (cancelled) and its caller is no longer there to ask")
	case only.asker == nil:
		return refuse(jsonrpc.CodeMethodNotFound, "the call in flight on this connection has a caller that cannot be asked for input through the gateway (only an MCP caller with a session that declared the capability can)")
	}
	if !only.asker.queue() {
		return refuse(jsonrpc.CodeInvalidRequest, "the call already has %d requests for input waiting, the gateway's bound", maxQueuedInput)
	}
	return only.asker, nil
}

// resultTask is the task a tasks/result request is for ("" for any other).
func resultTask(req *jsonrpc.Request) string {
	if req.Method != "tasks/result" {
		return ""
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(req.Params, &p) != nil || len(p.TaskID) > maxTaskIDBytes {
		return ""
	}
	return p.TaskID
}

// relatedTask is the task a request's _meta names (related-task; "" for
// none).
func relatedTask(params json.RawMessage) string {
	var p struct {
		Meta struct {
			Related struct {
				TaskID string `json:"taskId"`
			} `json:"io.modelcontextprotocol/related-task"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.Related.TaskID) > maxTaskIDBytes {
		return ""
	}
	return p.Meta.Related.TaskID
}

// answer writes the answer to the upstream's request id.
func (c *attributedConn) answer(id jsonrpc.ID, res json.RawMessage, err error) {
	resp := &jsonrpc.Response{ID: id, Result: res}
	if err != nil {
		resp.Result = nil
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway could not relay the request"}
		}
		resp.Error = rpc
	}
	ctx, cancel := context.WithTimeout(context.Background(), answerWriteWait)
	defer cancel()
	// A failed write is the connection's end, which its reader sees.
	_ = c.Connection.Write(ctx, resp)
}

// asker asks one call's caller, through its InputFunc, the requests for
// input attributed to the call: one at a time, while the call is in
// flight (ctx ends when the upstream answers it or the call returns).
type asker struct {
	f      InputFunc
	ctx    context.Context
	cancel context.CancelFunc
	turn   chan struct{}
	asking sync.WaitGroup

	mu     sync.Mutex
	done   bool
	queued int
}

type askerKey struct{}

func askerFrom(ctx context.Context) *asker {
	a, _ := ctx.Value(askerKey{}).(*asker)
	return a
}

// queue reserves a place for one more request, or is false: the call
// returned, or has maxQueuedInput waiting.
func (a *asker) queue() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done || a.queued >= maxQueuedInput {
		return false
	}
	a.queued++
	a.asking.Add(1)
	return true
}

// ask asks the caller method with params, the upstream's request id, in
// its turn (after queue).
func (a *asker) ask(id jsonrpc.ID, method string, params json.RawMessage) (json.RawMessage, error) {
	defer a.asking.Done()
	defer func() {
		a.mu.Lock()
		a.queued--
		a.mu.Unlock()
	}()
	select {
	case a.turn <- struct{}{}:
		defer func() { <-a.turn }()
	case <-a.ctx.Done():
	}
	if a.ctx.Err() != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + ": the call it belongs to has ended"}
	}
	rawID, err := json.Marshal(id.Raw())
	if err != nil || len(rawID) > maxRequestIDBytes {
		rawID = nil // not one to answer later: RequestID is nil
	}
	return a.f(context.WithValue(a.ctx, requestIDKey{}, json.RawMessage(rawID)), method, params)
}

// answered: the upstream answered the call, so nothing more is asked for it.
func (a *asker) answered() { a.cancel() }

func (a *asker) isDone() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

// finish ends the call's asking and waits for what was being asked: the
// call's record (its audit line) is read after it returns.
func (a *asker) finish() {
	a.mu.Lock()
	a.done = true
	a.mu.Unlock()
	a.cancel()
	a.asking.Wait()
}

// CallThroughSDK is cs.CallTool whose requests for input, on a stdio or
// legacy SSE connection (attributedConn), are asked through ctx's
// InputFunc (WithInput; none: refused).
func CallThroughSDK(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx, finish := withAsker(ctx)
	defer finish()
	return cs.CallTool(ctx, p)
}

// withAsker is ctx whose request, written through an attributedConn, has
// the requests for input attributed to it asked through ctx's InputFunc
// (none: ctx itself, and such requests are refused); finish ends the
// asking once the request is answered.
func withAsker(ctx context.Context) (_ context.Context, finish func()) {
	f := inputFrom(ctx)
	if f == nil {
		return ctx, func() {}
	}
	a := &asker{f: f, turn: make(chan struct{}, 1)}
	a.ctx, a.cancel = context.WithCancel(ctx)
	return context.WithValue(ctx, askerKey{}, a), a.finish
}

// DeclaringNoRounds is p as sent on cs over stdio: from MCP 2026-07-28 on
// an upstream asks for input in rounds (InputRequiredResult), which on an
// SDK session its client would answer itself — with the handlers that
// declare the kinds, which refuse — and the gateway relays none over one
// stream. So such a call's _meta declares no input (the SDK's default
// capabilities, which it then does not replace), and the upstream does not
// ask; before 2026-07-28 p is as it is.
func DeclaringNoRounds(cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolParams {
	r := cs.InitializeResult()
	if r == nil || r.ProtocolVersion < revisionRequestMeta {
		return p
	}
	q := *p
	q.Meta = mcp.Meta{}
	maps.Copy(q.Meta, p.Meta)
	q.Meta[mcp.MetaKeyClientCapabilities] = noInputCapabilities
	return &q
}

// noInputCapabilities are the SDK's default client capabilities; only
// read (encoded), so shared.
var noInputCapabilities = map[string]any{"roots": map[string]any{"listChanged": true}}
