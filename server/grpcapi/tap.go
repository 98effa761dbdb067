package grpcapi

// The transport's tap: what a peer the gateway has not authenticated can
// make it hold. gRPC reads a unary request's whole message before any
// interceptor runs, and once a handler starts reading a message it opens
// the stream's flow-control window to the message's announced length
// (grpc-go's adjustWindow), so a peer can make the gateway buffer up to
// --max-recv-msg-size per stream for as long as it leaves the message
// unfinished. So the tap, which runs on the connection's reader goroutine
// when a stream's headers arrive and before anything of it is read:
//
//   - refuses a call whose credentials cannot be accepted (policy.Screen:
//     API keys, verified client certificates and JWTs whose key is cached
//     are decided in full, in memory; nothing here does I/O or waits);
//   - lets through, as unauthenticated, health and reflection (open by
//     design) and a JWT whose key is not cached (only the authentication
//     interceptor may fetch the JWK Set): at most PreAuthBounds.MaxStreams
//     such streams per connection, each of whose messages must arrive
//     within PreAuthBounds.ReceiveTimeout or the stream is cancelled.
//
// The authentication interceptor still decides every call; a JWT the tap
// verified in full is handed to it (screenedCaller) rather than verified
// twice. With authentication off the tap does nothing.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// PreAuthBounds bound the streams the tap lets through unauthenticated.
type PreAuthBounds struct {
	// MaxStreams caps them per connection; more are refused
	// (ResourceExhausted) on their headers.
	MaxStreams int
	// ReceiveTimeout is how long such a stream's awaited message may take
	// to arrive; past it the stream is cancelled (the client sees
	// Canceled: gRPC resets a stream whose context ended) and its bytes
	// dropped.
	ReceiveTimeout time.Duration
}

// The defaults of PreAuthBounds (a zero field takes its default).
const (
	DefaultPreAuthMaxStreams     = 2
	DefaultPreAuthReceiveTimeout = 10 * time.Second
)

// The reasons flowdrop_grpc_preauth_refusals_total counts besides the
// credentials' own.
const (
	reasonUnauthenticatedStreams = "unauthenticated-streams"
	reasonReceiveTimeout         = "receive-timeout"
)

// auditedOperations are the methods whose calls have audit lines, by
// full method name: a refusal on the headers is on record too.
var auditedOperations = map[string]string{
	gatewayv1.ToolGatewayService_InvokeTool_FullMethodName:       "InvokeTool",
	gatewayv1.ToolGatewayService_InvokeToolStream_FullMethodName: "InvokeTool", // a tool call too
	gatewayv1.ToolRegistryService_RegisterTool_FullMethodName:    "RegisterTool",
	gatewayv1.ToolRegistryService_DeleteTool_FullMethodName:      "DeleteTool",
}

type preAuthTap struct {
	pipe   *pipeline.Pipeline
	bounds PreAuthBounds
	count  func(reason string)

	mu   sync.Mutex
	open map[*peer.Peer]int // unauthenticated streams by connection (gRPC keeps one Peer per connection)
}

func newPreAuthTap(p *pipeline.Pipeline, b PreAuthBounds, count func(string)) *preAuthTap {
	if count == nil {
		count = func(string) {}
	}
	if b.MaxStreams <= 0 {
		b.MaxStreams = DefaultPreAuthMaxStreams
	}
	if b.ReceiveTimeout <= 0 {
		b.ReceiveTimeout = DefaultPreAuthReceiveTimeout
	}
	return &preAuthTap{pipe: p, bounds: b, count: count, open: map[*peer.Peer]int{}}
}

// handle is the tap.ServerInHandle. It allocates only for what it refuses,
// lets through unauthenticated, or verified as a JWT.
func (t *preAuthTap) handle(ctx context.Context, info *tap.Info) (context.Context, error) {
	a := t.pipe.Policy().Auth
	if a.Off() {
		return ctx, nil
	}
	if isInfraMethod(info.FullMethodName) {
		return t.admitUnauthenticated(ctx)
	}
	p, _ := peer.FromContext(ctx)
	creds, perr := credentialsFrom(info.Header["authorization"], info.Header[apiKeyHeader], p, false)
	if perr != nil {
		return nil, t.refuse(info.FullMethodName, perr)
	}
	c, verified, err := a.Screen(creds)
	switch {
	case err != nil:
		return nil, t.refuse(info.FullMethodName, err)
	case !verified:
		return t.admitUnauthenticated(ctx)
	case c.Method == policy.MethodJWT:
		return context.WithValue(ctx, screenedKey{}, &screened{auth: a, caller: c}), nil
	}
	return ctx, nil
}

// refuse answers a call refused on its headers as the interceptor would
// (Unauthenticated with the reason), counts it and, for an audited method,
// writes its audit line (queued: the tap never waits).
func (t *preAuthTap) refuse(method string, err error) error {
	if pe, ok := policy.AsError(err); ok {
		t.count(pe.Reason)
		if op, ok := auditedOperations[method]; ok {
			t.pipe.Audit().RecordPreAuthRefusal(op, pe.Reason)
		}
	}
	return statusError(err)
}

// isInfraMethod reports whether method is a health or reflection method
// (served to anyone, as skipInfra says).
func isInfraMethod(method string) bool {
	svc, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return isInfraService(svc)
}

// admitUnauthenticated takes one of the connection's unauthenticated
// slots and starts the clock on the stream's message.
func (t *preAuthTap) admitUnauthenticated(ctx context.Context) (context.Context, error) {
	p, _ := peer.FromContext(ctx)
	if !t.acquire(p) {
		return nil, t.tooMany()
	}
	g := &receiveGuard{tap: t, conn: p, holding: true}
	ctx, g.cancel = context.WithCancelCause(ctx)
	g.timer = time.AfterFunc(t.bounds.ReceiveTimeout, g.expire)
	context.AfterFunc(ctx, g.end) // the stream ended (gRPC cancels its context)
	return context.WithValue(ctx, guardKey{}, g), nil
}

func (t *preAuthTap) tooMany() error {
	t.count(reasonUnauthenticatedStreams)
	return status.Errorf(codes.ResourceExhausted,
		"more than %d unauthenticated streams on this connection: send credentials, or wait for one to end", t.bounds.MaxStreams)
}

func (t *preAuthTap) acquire(p *peer.Peer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[p] >= t.bounds.MaxStreams {
		return false
	}
	t.open[p]++
	return true
}

func (t *preAuthTap) release(p *peer.Peer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[p] <= 1 {
		delete(t.open, p)
	} else {
		t.open[p]--
	}
}

// errReceiveTimeout is the cause of a stream cancelled by its guard (for
// the handler's context.Cause).
var errReceiveTimeout = errors.New("the request message did not arrive in time")

// receiveGuard is one unauthenticated stream's clock and slot.
type receiveGuard struct {
	tap    *preAuthTap
	conn   *peer.Peer
	cancel context.CancelCauseFunc
	timer  *time.Timer

	mu      sync.Mutex
	holding bool // holds one of its connection's slots
}

type guardKey struct{}

func guardFrom(ctx context.Context) *receiveGuard {
	g, _ := ctx.Value(guardKey{}).(*receiveGuard)
	return g
}

func (g *receiveGuard) expire() {
	g.tap.count(reasonReceiveTimeout)
	g.cancel(errReceiveTimeout)
}

// received stops the clock and gives the slot back: the awaited message
// has been read.
func (g *receiveGuard) received() {
	g.timer.Stop()
	g.release()
}

// await takes a slot again and restarts the clock for the stream's next
// message (a reflection stream's next request).
func (g *receiveGuard) await() error {
	if !g.tap.acquire(g.conn) {
		return g.tap.tooMany()
	}
	g.mu.Lock()
	g.holding = true
	g.mu.Unlock()
	g.timer.Reset(g.tap.bounds.ReceiveTimeout)
	return nil
}

func (g *receiveGuard) end() {
	g.timer.Stop()
	g.release()
}

func (g *receiveGuard) release() {
	g.mu.Lock()
	held := g.holding
	g.holding = false
	g.mu.Unlock()
	if held {
		g.tap.release(g.conn)
	}
}

// messageReceived marks an unauthenticated unary call's message read: by
// the time the first unary interceptor runs, gRPC has read it whole.
func messageReceived(next grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if g := guardFrom(ctx); g != nil {
			g.received()
		}
		return next(ctx, req, info, h)
	}
}

// guardStreamMessages times each message an unauthenticated stream awaits
// (the first was started by the tap).
func guardStreamMessages(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	g := guardFrom(ss.Context())
	if g == nil {
		return h(srv, ss)
	}
	return h(srv, &guardedStream{ServerStream: ss, g: g})
}

type guardedStream struct {
	grpc.ServerStream
	g       *receiveGuard
	waiting bool // a message after the first
}

func (s *guardedStream) RecvMsg(m any) error {
	if s.waiting {
		if err := s.g.await(); err != nil {
			return err
		}
	}
	s.waiting = true
	err := s.ServerStream.RecvMsg(m)
	s.g.received()
	return err
}

// screened is a JWT caller the tap verified in full, under auth.
type screened struct {
	auth   *policy.Authenticator
	caller policy.Caller
}

type screenedKey struct{}

// screenedCaller is the caller the tap verified for this call, if it did
// so under a, the Authenticator the call is decided by (a policy reload
// in between means authenticating again).
func screenedCaller(ctx context.Context, a *policy.Authenticator) (policy.Caller, bool) {
	s, ok := ctx.Value(screenedKey{}).(*screened)
	if !ok || s.auth != a {
		return policy.Caller{}, false
	}
	return s.caller, true
}
