package mcpupstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over stdio and legacy HTTP+SSE a session's one connection is the SDK
// client's, and the go-sdk v1.8.0 client sends only the methods it knows
// (no tasks) and hands a notification to its handler on a goroutine of its
// own, so a call's last notifications/progress, sent just before its
// answer, could be handled after the call had returned. sideConn is that
// connection read and written through, beside the SDK:
//
//   - the gateway's own requests (Caller.sideRequest: tasks/ methods, a
//     task-augmented tools/call) are written with ids of the gateway's
//     ("flowdrop-side-N"; the SDK's are numbers), and their answers are
//     taken off the connection before the SDK reads them;
//   - a notifications/progress for a token the gateway gave a call
//     (routeProgress) is taken off the connection in order, before the
//     answer that follows it, and queued to that call, which hands the
//     queue to its onProgress before it returns.
//
// It is the outermost layer of the session's connection, so its requests
// pass attributedConn like the SDK's (a request for input while one is in
// flight is attributed, or refused, as for any request).

// sideIDPrefix marks the gateway's own requests on a sideConn.
const sideIDPrefix = "flowdrop-side-"

// maxQueuedProgress bounds the progress notifications queued to one call
// (more are dropped: a face relays at most 64 a call).
const maxQueuedProgress = 64

// sideTransport is t read and written through a sideConn, kept in made
// (a transport is connected once, for one session).
type sideTransport struct {
	t    mcp.Transport
	made *sideConn
}

func (s *sideTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := s.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s.made = newSideConn(c)
	return s.made, nil
}

// sideConn is a session's connection with the gateway's side requests and
// its progress routing (above).
type sideConn struct {
	mcp.Connection
	// instance names this connection among every session the gateway
	// made (random): a task made on it is reached again only on it.
	instance string
	ids      atomic.Uint64

	mu       sync.Mutex
	pending  map[string]chan *jsonrpc.Response // side requests in flight, by id
	progress map[string]*progressQueue         // by the gateway's token
	ended    bool
	done     chan struct{} // closed when the connection ends
}

func newSideConn(c mcp.Connection) *sideConn {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &sideConn{Connection: c, instance: hex.EncodeToString(b[:]),
		pending: map[string]chan *jsonrpc.Response{}, progress: map[string]*progressQueue{}, done: make(chan struct{})}
}

func (c *sideConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.end()
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if id, ok := m.ID.Raw().(string); ok && strings.HasPrefix(id, sideIDPrefix) {
				c.mu.Lock()
				ch := c.pending[id]
				delete(c.pending, id)
				c.mu.Unlock()
				if ch != nil {
					ch <- m // buffered: never waits
				}
				continue // an answer the gateway gave up on: dropped
			}
		case *jsonrpc.Request:
			if !m.IsCall() && m.Method == "notifications/progress" && c.routeProgress(m.Params) {
				continue
			}
		}
		return msg, nil
	}
}

func (c *sideConn) Close() error {
	c.end()
	return c.Connection.Close()
}

// end fails the side requests in flight: no answer comes any more.
func (c *sideConn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.ended = true
		close(c.done)
	}
}

// request sends method with params (a JSON object) as a request of the
// gateway's and waits for its answer: the result, at most limit bytes
// (negative: any; more is ErrResponseTooLarge); the upstream's JSON-RPC
// error as a *jsonrpc.Error. When ctx ends first the upstream is sent
// notifications/cancelled for it.
func (c *sideConn) request(ctx context.Context, method string, params json.RawMessage, limit int64) (json.RawMessage, error) {
	id := sideIDPrefix + strconv.FormatUint(c.ids.Add(1), 10)
	jid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return nil, mcp.ErrConnectionClosed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: jid, Method: method, Params: params}); err != nil {
		forget()
		return nil, err
	}
	answered := func(r *jsonrpc.Response) (json.RawMessage, error) {
		if r.Error != nil {
			return nil, r.Error
		}
		if limit >= 0 && int64(len(r.Result)) > limit {
			return nil, fmt.Errorf("%w: %s answered %d bytes, over %d", ErrResponseTooLarge, method, len(r.Result), limit)
		}
		return r.Result, nil
	}
	select {
	case r := <-ch:
		return answered(r)
	case <-c.done:
		forget()
		select {
		case r := <-ch: // read just before the connection ended
			return answered(r)
		default:
		}
		return nil, fmt.Errorf("%s: %w", method, mcp.ErrConnectionClosed)
	case <-ctx.Done():
		forget()
		c.cancelled(jid)
		return nil, ctx.Err()
	}
}

// sideCancelWait bounds writing notifications/cancelled for a side
// request given up on.
const sideCancelWait = 5 * time.Second

// cancelled tells the upstream the gateway gave up on its request id.
func (c *sideConn) cancelled(id jsonrpc.ID) {
	params, err := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "the gateway's caller gave up"})
	if err != nil {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), sideCancelWait)
	defer stop()
	_ = c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
}

// progressQueue is one call's progress, taken off the connection in order
// and handed to its onProgress off the reading goroutine (a caller slow to
// read holds up its own call, not the connection).
type progressQueue struct {
	ch   chan Progress
	done chan struct{}
}

// routeProgress queues a notifications/progress for a token of the
// gateway's to its call, reporting whether the token was one (its
// notification is then the gateway's alone: one for a call no longer in
// flight is dropped).
func (c *sideConn) routeProgress(params json.RawMessage) bool {
	var p struct {
		Token    any     `json:"progressToken"`
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	token, ok := p.Token.(string)
	if !ok || !strings.HasPrefix(token, progressTokenPrefix) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.progress[token]; q != nil {
		select {
		case q.ch <- Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}:
		default: // over maxQueuedProgress: dropped
		}
	}
	return true
}

// progressTokenPrefix begins every progress token the gateway gives a
// call on a stdio or legacy SSE session (ProgressToken).
const progressTokenPrefix = "flowdrop-progress-"

// watchProgress hands token's progress to f, in order, until the returned
// stop, which returns once f has been handed every notification read
// before it was called.
func (c *sideConn) watchProgress(token string, f func(Progress)) (stop func()) {
	q := &progressQueue{ch: make(chan Progress, maxQueuedProgress), done: make(chan struct{})}
	c.mu.Lock()
	c.progress[token] = q
	c.mu.Unlock()
	go func() {
		defer close(q.done)
		for p := range q.ch {
			f(p)
		}
	}()
	return func() {
		c.mu.Lock()
		delete(c.progress, token)
		close(q.ch)
		c.mu.Unlock()
		<-q.done
	}
}

// sideRequest sends method with params as the gateway's own request on a
// stdio or legacy SSE session (ErrTasksUnsupported on any other), its
// answer held to ctx's response budget (WithResponseLimit) when it has one.
func (c *Caller) sideRequest(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.side == nil {
		return nil, ErrTasksUnsupported
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	limit := int64(-1)
	l, _ := ctx.Value(responseLimitKey{}).(*responseLimit)
	if l != nil {
		limit = max(l.left.Load(), 0)
	}
	res, err := c.side.request(ctx, method, raw, limit)
	if l != nil {
		if errors.Is(err, ErrResponseTooLarge) {
			l.cancel(ErrResponseTooLarge)
		} else {
			l.left.Add(-int64(len(res)))
		}
	}
	return res, err
}

// sideTasks: the session carries the gateway's task requests — it is a
// stdio or legacy SSE session (a sideConn) on a revision whose tasks are
// requested with params.task (2025-11-25; 2026-07-28 moved them to an
// extension the gateway speaks over HTTP only).
func (c *Caller) sideTasks() bool {
	rev := c.revision()
	return c.side != nil && rev >= revisionTasks && rev < revisionRequestMeta
}

// CarriesTasks reports whether the gateway's task requests can be sent on
// the session: over streamable HTTP always (Caller.TasksExtension says in
// which dialect), over stdio and legacy SSE on 2025-11-25 (sideTasks).
func (c *Caller) CarriesTasks() bool { return !c.sdk || c.sideTasks() }

// revisionTasks is the first revision with tasks (SEP-1686).
const revisionTasks = "2025-11-25"

// WatchProgress hands the upstream's notifications/progress for token
// (ProgressToken's) to f, in the order read, until the returned stop,
// which returns once f has been handed every one read before it: called
// after the call's answer, none sent before that answer is lost. nil when
// the session has no sideConn (streamable HTTP reads a call's progress
// from its own stream).
func (c *Caller) WatchProgress(token string, f func(Progress)) (stop func()) {
	if c.side == nil {
		return nil
	}
	return c.side.watchProgress(token, f)
}

// ProgressToken is the token of the gateway's n-th call asking a stdio or
// legacy SSE upstream for progress (a session's tokens must differ).
func ProgressToken(n uint64) string {
	return progressTokenPrefix + strconv.FormatUint(n, 10)
}

// ConnectionBound reports whether a task made on the session is reached
// again only on its one connection (a sideConn: stdio and legacy SSE),
// which exists in this process alone.
func (c *Caller) ConnectionBound() bool { return c.side != nil }

// ConnectionInstance is the random name of a ConnectionBound session's
// connection, which the session keys of its tasks carry ("" for any
// other session).
func (c *Caller) ConnectionInstance() string {
	if c.side == nil {
		return ""
	}
	return c.side.instance
}

// sessionKey is the id of the session a task made on it is reached
// through again: the upstream's session id over streamable HTTP; a
// sideConn's instance over stdio and legacy SSE, whose one connection is
// the session.
func (c *Caller) sessionKey() string {
	if c.side != nil {
		return c.side.instance
	}
	return c.Session.ID()
}
