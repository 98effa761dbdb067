package mcpapi

// The standalone GET stream of a face session before 2026-07-28
// (streamable HTTP "listening for messages from the server"): the one
// place the face sends such a session notifications/resources/updated for
// the URIs it subscribed to (sessionsubs.go). Without a session a GET
// stays 405, as on a stateless server.
//
// One stream per session: the 2025-11-25 transport lets a client hold
// several streams but has the server send each message on one of them,
// and answers a GET with text/event-stream or 405 (nothing else), so a
// second GET is served and replaces the first, on any replica: the
// newest stream claims the session in the store, and the replica holding
// the older one closes it on notice (or at its next resync).
//
// Bounded: maxSessionStreams streams on a replica, maxStreamsPerCaller of
// them per caller (429 past either); sessionStreamQueue messages waiting
// per stream, past which the stream is closed (the client reconnects and
// re-reads: no update is replayed, Last-Event-ID is not honoured); the
// session's expiry ends its stream. Every update is checked at delivery
// against the policy in force then: a URI the caller may no longer read,
// or whose upstream left its view, is not sent and leaves the session's
// subscriptions. A JWT caller's stream also ends when its token expires.
// Each message carries an event id and, from 2025-11-25, the
// stream opens with a priming event (SEP-1699), so a client reconnects
// after the stream ends.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

const (
	// maxSessionStreams bounds the session streams open on one replica.
	maxSessionStreams = 1024
	// maxStreamsPerCaller bounds one caller's session streams on one
	// replica (a caller may hold many sessions).
	maxStreamsPerCaller = 16
	// sessionStreamQueue bounds the messages waiting for one stream.
	sessionStreamQueue = 64
	// sessionKeepAlive is how often an idle stream gets an SSE comment, so
	// a dead connection is found and intermediaries keep it open.
	sessionKeepAlive = 25 * time.Second
	// sessionRetry is the reconnection delay a stream asks of its client.
	sessionRetry = 2 * time.Second
	// revisionPriming is the first revision whose clients expect a
	// stream's priming event.
	revisionPriming = "2025-11-25"
)

// streamSet is this replica's session streams.
type streamSet struct {
	mu        sync.Mutex
	byKey     map[string]*sessionStream
	perCaller map[string]int
}

func (s *streamSet) get(key string) *sessionStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// all is every open stream.
func (s *streamSet) all() []*sessionStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*sessionStream, 0, len(s.byKey))
	for _, st := range s.byKey {
		out = append(out, st)
	}
	return out
}

// open registers st, replacing (closing) the session's stream on this
// replica; false over a bound.
func (s *streamSet) open(st *sessionStream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey, s.perCaller = map[string]*sessionStream{}, map[string]int{}
	}
	old := s.byKey[st.key]
	n := len(s.byKey)
	if old != nil {
		n--
	}
	if n >= maxSessionStreams || s.perCaller[st.caller] >= maxStreamsPerCaller && (old == nil || old.caller != st.caller) {
		return false
	}
	if old != nil {
		old.close("replaced by a newer stream of the session")
		s.perCaller[old.caller]--
	}
	s.byKey[st.key] = st
	s.perCaller[st.caller]++
	return true
}

// remove forgets st unless a newer stream replaced it.
func (s *streamSet) remove(st *sessionStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[st.key] != st {
		return
	}
	delete(s.byKey, st.key)
	if s.perCaller[st.caller]--; s.perCaller[st.caller] <= 0 {
		delete(s.perCaller, st.caller)
	}
}

// sessionStream is one open GET stream.
type sessionStream struct {
	key, id, owner, caller string
	// ctx has the GET's values (caller, bundle), not its end: policy
	// checks run on it with the policy in force (policyCtx).
	ctx    context.Context
	idle   time.Duration
	q      chan []byte
	resync chan struct{}
	closed chan struct{}
	once   sync.Once
	why    string

	// syncMu orders changes of held: a resync, a subscribe answered here,
	// a drop at delivery.
	syncMu sync.Mutex
	mu     sync.Mutex
	held   map[string]bool // face URIs subscribed at their upstream for it
}

func (st *sessionStream) close(why string) {
	st.once.Do(func() {
		st.why = why
		close(st.closed)
	})
}

func (st *sessionStream) resyncSoon() {
	select {
	case st.resync <- struct{}{}:
	default:
	}
}

func (st *sessionStream) holds(uri string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held[uri]
}

func (st *sessionStream) setHeld(uri string, on bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if on {
		st.held[uri] = true
	} else {
		delete(st.held, uri)
	}
}

func (st *sessionStream) heldURIs() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.held))
	for u := range st.held {
		out = append(out, u)
	}
	return out
}

// send queues one message; a full queue closes the stream.
func (st *sessionStream) send(msg []byte) {
	select {
	case st.q <- msg:
	default:
		st.close(fmt.Sprintf("over %d messages waiting", sessionStreamQueue))
	}
}

// policyCtx is the stream's context under the policy in force now.
func (m *Server) policyCtx(st *sessionStream) context.Context {
	return pipeline.WithPolicy(st.ctx, m.pipe.Policy())
}

// serveSessionStream serves a GET carrying a session: the session's
// stream until the client leaves, the session expires, a newer stream
// replaces it, its queue overflows, or the server drains.
func (m *Server) serveSessionStream(w http.ResponseWriter, r *http.Request, key string) {
	s := sessionFrom(r.Context())
	if !acceptsEventStream(r.Header.Values("Accept")) {
		m.refuseHTTP(w, r, "a GET opens the session's event stream: it must accept text/event-stream", http.StatusNotAcceptable, "stream-not-acceptable")
		return
	}
	idb := make([]byte, 8)
	_, _ = rand.Read(idb)
	id := hex.EncodeToString(idb)
	st := &sessionStream{key: key, id: id, owner: sessionOwner(key, id), caller: callerKey(r.Context()),
		ctx: context.WithoutCancel(r.Context()), idle: m.sessionIdle(s),
		q: make(chan []byte, sessionStreamQueue), resync: make(chan struct{}, 1), closed: make(chan struct{}), held: map[string]bool{}}
	if !m.streams.open(st) {
		w.Header().Set("Retry-After", "30")
		m.refuseHTTP(w, r, fmt.Sprintf("too many event streams: at most %d per caller and %d in all on this server", maxStreamsPerCaller, maxSessionStreams),
			http.StatusTooManyRequests, "stream-limit")
		return
	}
	defer m.endStream(st)
	ctx, cancel := context.WithTimeout(st.ctx, sessionStoreTimeout)
	err := m.sessionSubs.Claim(ctx, key, st.id, st.idle)
	if err == nil {
		err = m.syncStream(ctx, st)
	}
	cancel()
	if err != nil {
		m.log.WarnContext(r.Context(), "MCP session stream: the subscription store did not answer", "error", err)
		w.Header().Set("Retry-After", "5")
		m.refuseHTTP(w, r, "the session's subscriptions could not be read; try again", http.StatusServiceUnavailable, "stream-store")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := 0
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	prime := fmt.Sprintf("retry: %d\n\n", sessionRetry.Milliseconds())
	if s.Revision >= revisionPriming {
		prime = fmt.Sprintf("id: %s-0\nretry: %d\n\n", st.id, sessionRetry.Milliseconds())
	}
	if !write([]byte(prime)) {
		return
	}
	go m.resyncLoop(st)
	expiry := time.NewTimer(time.Until(streamUntil(r.Context(), s)))
	defer expiry.Stop()
	keepAlive := time.NewTicker(sessionKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case msg := <-st.q:
			n++
			if !write(fmt.Appendf(nil, "event: message\nid: %s-%d\ndata: %s\n\n", st.id, n, msg)) {
				return
			}
		case <-keepAlive.C:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
		case <-expiry.C:
			st.close("the session or the caller's token expired")
		case <-r.Context().Done():
			st.close("the client left")
		case <-m.drain.Done():
			st.close("the server is shutting down")
		case <-st.closed:
			m.log.DebugContext(r.Context(), "MCP session stream closed", "why", st.why, "caller", policy.Bound(st.caller))
			return
		}
	}
}

// streamUntil is when a stream ends at the latest: the session's expiry,
// or a JWT caller's token's, if sooner (its reconnecting GET authenticates
// again).
func streamUntil(ctx context.Context, s *faceSession) time.Time {
	until := time.Unix(s.Expires, 0)
	if c, _ := policy.CallerFrom(ctx); c.Token != nil && !c.Token.Expiry.IsZero() && c.Token.Expiry.Before(until) {
		until = c.Token.Expiry
	}
	return until
}

// endStream forgets a stream and its upstream subscriptions; the session's
// set stays (a reconnecting GET picks it up) until it expires idle.
func (m *Server) endStream(st *sessionStream) {
	st.close("ended")
	m.streams.remove(st)
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	for _, uri := range st.heldURIs() {
		m.release(st.owner, uri)
		st.setHeld(uri, false)
	}
}

// resyncLoop re-reads the stream's set on notice and every sessionResync.
func (m *Server) resyncLoop(st *sessionStream) {
	t := time.NewTicker(sessionResync)
	defer t.Stop()
	for {
		select {
		case <-st.closed:
			return
		case <-t.C:
		case <-st.resync:
		}
		ctx, cancel := context.WithTimeout(st.ctx, sessionStoreTimeout)
		if err := m.syncStream(ctx, st); err != nil {
			m.log.Warn("MCP session stream: the subscription store did not answer; kept what it had", "error", err)
		}
		cancel()
	}
}

// syncStream makes the stream's upstream subscriptions its session's set:
// it subscribes what was added (a URI no longer admitted, or that its
// upstream refuses, leaves the set) and releases what was removed. A
// newer stream's claim closes this one.
func (m *Server) syncStream(ctx context.Context, st *sessionStream) error {
	// Read under syncMu: a subscribe answered here meanwhile (ensureHeld)
	// is then in what is read.
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	uris, holder, err := m.sessionSubs.List(ctx, st.key, st.idle)
	if err != nil {
		return err
	}
	if holder != "" && holder != st.id {
		st.close("replaced by a newer stream of the session")
		return nil
	}
	select {
	case <-st.closed:
		return nil // endStream releases, or has released, what it held
	default:
	}
	want := make(map[string]bool, len(uris))
	for _, uri := range uris {
		want[uri] = true
		if st.holds(uri) {
			continue
		}
		pctx := m.policyCtx(st)
		u, upstreamURI := m.subscribable(pctx, uri)
		if u == nil {
			_ = m.sessionSubs.Remove(ctx, st.key, uri)
			continue
		}
		if err := m.hold(pctx, st.owner, uri, u, upstreamURI); err != nil {
			var rpc *jsonrpc.Error
			if errors.As(err, &rpc) && rpc.Code == MCPCodeSubscriptionLimit {
				// This replica's bound in all: the next resync tries again.
				m.log.Warn("MCP session subscriptions: over this replica's bound of subscriptions; kept for the next resync", "bound", maxSubscriptionsTotal)
				continue
			}
			m.log.Warn("MCP session subscriptions: not subscribed at the upstream; dropped", "namespace", u.ns, "error", err)
			_ = m.sessionSubs.Remove(ctx, st.key, uri)
			continue
		}
		st.setHeld(uri, true)
	}
	for _, uri := range st.heldURIs() {
		if !want[uri] {
			m.release(st.owner, uri)
			st.setHeld(uri, false)
		}
	}
	return nil
}

// ensureHeld subscribes the stream to uri at its upstream now, unless it
// is already (a subscribe answered on the stream's replica).
func (m *Server) ensureHeld(ctx context.Context, st *sessionStream, uri string, u *federatedUpstream, upstreamURI string) error {
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	if st.holds(uri) {
		return nil
	}
	select {
	case <-st.closed:
		return nil // a reconnecting GET subscribes it from the set
	default:
	}
	if err := m.hold(ctx, st.owner, uri, u, upstreamURI); err != nil {
		return err
	}
	st.setHeld(uri, true)
	return nil
}

// updatedMessage is notifications/resources/updated for a face URI.
func updatedMessage(uri string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": map[string]string{"uri": uri}})
	return b
}

// deliverSessionUpdate sends an update of the face URI uri to the
// session streams subscribed to it whose caller may still read it.
func (m *Server) deliverSessionUpdate(uri string) {
	var msg []byte
	for _, st := range m.streams.all() {
		if !st.holds(uri) {
			continue
		}
		if !m.mayStillRead(m.policyCtx(st), uri) {
			go m.dropHeld(st, uri)
			continue
		}
		if msg == nil {
			msg = updatedMessage(uri)
		}
		st.send(msg)
	}
}

// mayStillRead: the policy in force lets the caller read uri, and its
// upstream is still in the caller's view.
func (m *Server) mayStillRead(ctx context.Context, uri string) bool {
	if !m.mayListResources(ctx) || !m.mayReadResource(ctx, uri) {
		return false
	}
	u, _ := m.upstreamOfURI(ctx, uri)
	return u != nil
}

// dropHeld ends a subscription the policy no longer admits: released at
// the upstream and out of the session's set.
func (m *Server) dropHeld(st *sessionStream, uri string) {
	st.syncMu.Lock()
	if st.holds(uri) {
		m.release(st.owner, uri)
		st.setHeld(uri, false)
	}
	st.syncMu.Unlock()
	ctx, cancel := context.WithTimeout(st.ctx, sessionStoreTimeout)
	defer cancel()
	if err := m.sessionSubs.Remove(ctx, st.key, uri); err != nil {
		m.log.Warn("MCP session subscriptions: a subscription the policy no longer admits stays in the store; the next resync drops it", "error", err)
	}
}

// serveSessionNotices re-reads a session's set on the fleet's notice,
// where its stream is, until the drain.
func (m *Server) serveSessionNotices() {
	defer close(m.noticesDone)
	m.sessionSubs.Serve(m.drain, func(key string) {
		if st := m.streams.get(key); st != nil {
			st.resyncSoon()
		}
	})
}

// acceptsEventStream: an Accept header names text/event-stream (or any
// type).
func acceptsEventStream(accept []string) bool {
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "text/event-stream", "text/*", "*/*":
				return true
			}
		}
	}
	return false
}
