package mcpapi

// Resource subscriptions of face sessions (session.go) before 2026-07-28:
// resources/subscribe and resources/unsubscribe in POSTs carrying the
// session's Mcp-Session-Id, and notifications/resources/updated on the
// session's standalone GET stream (sessionstream.go).
//
// Which URIs a session subscribed to lives in a SessionSubscriptions
// store keyed by the session (a digest of its id): Redis in a fleet, so a
// subscribe answered by one replica and a GET served by another see the
// same set; this replica's memory otherwise. The upstream is subscribed by
// the replica holding the session's stream, for the URIs in the set (the
// refcounted upstream subscriptions of subscriptions.go), so an upstream's
// update reaches the replica whose stream hears it and never crosses
// Redis. A subscribe or unsubscribe answered elsewhere notifies that
// replica (the store's pub/sub), which re-reads the set; it also re-reads
// it every sessionResync, which heals a lost notice and a stream replaced
// by a GET on another replica. A session's set expires sessionSubsIdle
// after it was last touched (a request, or the resync of an open stream),
// and at the session's own expiry.
//
// A subscription is admitted as one on a listen stream is (subscribable:
// the caller may read the URI, its upstream is in the caller's view and
// declares resources.subscribe), at most maxSubscriptionsPerCaller per
// session. The answer comes once the set holds it; when the session's
// stream is on this replica the upstream is subscribed first and its
// refusal is the caller's error. A stream elsewhere subscribes it on
// notice: an upstream's refusal there is logged and the URI leaves the
// set. Without a session (or without key files: no sessions) the methods
// are refused as on a stateless face (refuseLegacySubscribe).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
)

const (
	// sessionSubsIdle is how long a session's subscriptions outlive its
	// last request or stream.
	sessionSubsIdle = 30 * time.Minute
	// sessionResync is how often an open stream re-reads its session's
	// subscriptions (and keeps them from expiring).
	sessionResync = 30 * time.Second
	// sessionStoreTimeout bounds one store operation a request waits on.
	sessionStoreTimeout = 2 * time.Second
	// maxMemorySessionSubs bounds the subscriptions the in-memory store
	// keeps, over all sessions.
	maxMemorySessionSubs = maxSubscriptionsTotal
	// maxMemorySessions bounds the sessions it keeps (streams claim
	// sessions with no subscription too).
	maxMemorySessions = 16384
)

// ErrSessionSubscriptionLimit: a session is at its bound of subscriptions
// (or the in-memory store at its own).
var ErrSessionSubscriptionLimit = errors.New("subscription bound reached")

// SessionSubscriptions keeps the face sessions' subscribed URIs where
// every replica serving the session reads them (redisstate.SessionSubs in
// a fleet). Sessions are named by sessionKey; a set expires idle after it
// was last written or listed.
type SessionSubscriptions interface {
	// Add puts uri in session's set unless that holds max already
	// (ErrSessionSubscriptionLimit); adding a URI it holds is no change.
	Add(ctx context.Context, session, uri string, max int, idle time.Duration) error
	// Remove takes uri out of session's set.
	Remove(ctx context.Context, session, uri string) error
	// List is session's set and the stream that last claimed the session
	// (""), and keeps both from expiring for idle.
	List(ctx context.Context, session string, idle time.Duration) (uris []string, holder string, err error)
	// Claim records stream as the session's one stream and notifies.
	Claim(ctx context.Context, session, stream string, idle time.Duration) error
	// Notify tells the replica holding session's stream that its set or
	// holder changed.
	Notify(ctx context.Context, session string) error
	// Serve calls notified with each session notified, until ctx ends.
	Serve(ctx context.Context, notified func(session string))
}

type sessionKeyCtx struct{}

// sessionKey names a session id in the store and on the fleet's channel:
// a digest, so the sealed id itself is kept nowhere.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(sessionPurpose + "\x00" + id))
	return hex.EncodeToString(sum[:16])
}

// sessionKeyFrom is the key of the request's session, "" without one.
func sessionKeyFrom(ctx context.Context) string {
	k, _ := ctx.Value(sessionKeyCtx{}).(string)
	return k
}

// sessionOwner is whose the upstream subscriptions of a session's stream
// are (subscriptions.go counts them per owner): per stream, so a stream
// replacing another on this replica is not held to the bound by what the
// older one still holds.
func sessionOwner(key, stream string) string { return "session\x00" + key + "\x00" + stream }

// sessionStreams serves a session's GET (sessionstream.go) and, for any
// request carrying a session, puts its key in the request's context.
func (m *Server) sessionStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionFrom(r.Context()) == nil || m.sessionSubs == nil {
			next.ServeHTTP(w, r)
			return
		}
		key := sessionKey(r.Header.Get(sessionHeader))
		r = r.WithContext(context.WithValue(r.Context(), sessionKeyCtx{}, key))
		if r.Method == http.MethodGet {
			m.serveSessionStream(w, r, key)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sessionSubscriptionsOn reports whether a caller initializing now gets a
// session whose stream can carry subscriptions: the face mints one (key
// files, a subject it can carry) under a revision before 2026-07-28.
func (m *Server) sessionSubscriptionsOn(ctx context.Context, revision string) bool {
	if m.sessionSubs == nil || revision >= RevisionResultType || ctx.Value(sessionMintKey{}) == nil || m.input().Keys == nil {
		return false
	}
	c, _ := policy.CallerFrom(ctx)
	return len(c.Subject) <= maxSessionSubjectBytes
}

// subscribeLegacy answers resources/subscribe and resources/unsubscribe
// sent as requests of their own (before 2026-07-28).
func (m *Server) subscribeLegacy(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	key := sessionKeyFrom(ctx)
	s := sessionFrom(ctx)
	if key == "" || s == nil || m.upstreams == nil {
		return nil, refuseLegacySubscribe(method)
	}
	var uri string
	switch r := req.(type) {
	case *mcp.SubscribeRequest:
		if r.Params != nil {
			uri = r.Params.URI
		}
	case *mcp.UnsubscribeRequest:
		if r.Params != nil {
			uri = r.Params.URI
		}
	}
	if uri == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": missing uri"}
	}
	sctx, cancel := context.WithTimeout(withoutSDKValues(ctx), sessionStoreTimeout)
	defer cancel()
	idle := m.sessionIdle(s)
	if method == "resources/unsubscribe" {
		if err := m.sessionSubs.Remove(sctx, key, uri); err != nil {
			return nil, m.storeError(ctx, method, uri, err)
		}
		m.sessionChanged(sctx, key)
		return &mcp.ResultBase{}, nil
	}
	u, upstreamURI := m.subscribable(ctx, uri)
	if u == nil {
		return nil, resourceNotFound(uri)
	}
	if err := m.sessionSubs.Add(sctx, key, uri, maxSubscriptionsPerCaller, idle); err != nil {
		if errors.Is(err, ErrSessionSubscriptionLimit) {
			return nil, &jsonrpc.Error{Code: MCPCodeSubscriptionLimit, Message: fmt.Sprintf(
				"resource %q: over the gateway's bound of %d subscriptions per session", policy.Bound(uri), maxSubscriptionsPerCaller)}
		}
		return nil, m.storeError(ctx, method, uri, err)
	}
	if st := m.streams.get(key); st != nil {
		// The stream is here: subscribe the upstream now, so its refusal
		// is this answer.
		if err := m.ensureHeld(ctx, st, uri, u, upstreamURI); err != nil {
			_ = m.sessionSubs.Remove(sctx, key, uri)
			var rpc *jsonrpc.Error
			if errors.As(err, &rpc) && rpc.Code == MCPCodeSubscriptionLimit {
				return nil, err
			}
			return nil, m.upstreamError(ctx, method, uri, err)
		}
	}
	m.sessionChanged(sctx, key)
	return &mcp.ResultBase{}, nil
}

// sessionIdle is how long a session's set lives unless touched: idle, and
// never past the session's expiry.
func (m *Server) sessionIdle(s *faceSession) time.Duration {
	left := time.Until(time.Unix(s.Expires, 0))
	return max(min(sessionSubsIdle, left), time.Second)
}

// sessionChanged re-reads the session's set where its stream is: here at
// once, elsewhere by notice (a lost notice waits for the resync).
func (m *Server) sessionChanged(ctx context.Context, key string) {
	if st := m.streams.get(key); st != nil {
		st.resyncSoon()
		return
	}
	if err := m.sessionSubs.Notify(ctx, key); err != nil {
		m.log.WarnContext(ctx, "MCP session subscriptions: the fleet was not notified; the stream's replica re-reads them within its resync", "every", sessionResync, "error", err)
	}
}

// storeError is the caller's error when the store did not answer: not
// subscribed (or not unsubscribed), say so.
func (m *Server) storeError(ctx context.Context, method, uri string, err error) error {
	m.log.WarnContext(ctx, "MCP session subscriptions: the store did not answer", "method", method, "error", err)
	return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: fmt.Sprintf(
		"%s %q: the gateway's subscription store did not answer; nothing changed", method, policy.Bound(uri))}
}

// memorySessionSubs is the store of a gateway without Redis: this
// replica's memory, so a fleet without Redis serves a session's
// subscriptions only where its subscribe and its GET land together.
type memorySessionSubs struct {
	mu       sync.Mutex
	sessions map[string]*memorySession
	total    int
	notify   chan string // to Serve; a full one drops (the resync heals)
}

type memorySession struct {
	uris    map[string]bool
	holder  string
	expires time.Time
}

// NewMemorySessionSubscriptions is a store in this process's memory.
func NewMemorySessionSubscriptions() SessionSubscriptions {
	return &memorySessionSubs{sessions: map[string]*memorySession{}, notify: make(chan string, 256)}
}

// live is session's entry unless expired (an expired one is dropped).
func (s *memorySessionSubs) live(session string, now time.Time) *memorySession {
	e := s.sessions[session]
	if e != nil && now.After(e.expires) {
		s.total -= len(e.uris)
		delete(s.sessions, session)
		return nil
	}
	return e
}

// entry is session's entry, made if need be within maxMemorySessions.
func (s *memorySessionSubs) entry(session string, now time.Time) (*memorySession, error) {
	if e := s.live(session, now); e != nil {
		return e, nil
	}
	if len(s.sessions) >= maxMemorySessions {
		s.sweep(now)
		if len(s.sessions) >= maxMemorySessions {
			return nil, ErrSessionSubscriptionLimit
		}
	}
	e := &memorySession{uris: map[string]bool{}}
	s.sessions[session] = e
	return e, nil
}

func (s *memorySessionSubs) sweep(now time.Time) {
	for k := range s.sessions {
		s.live(k, now)
	}
}

func (s *memorySessionSubs) Add(_ context.Context, session, uri string, limit int, idle time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	e, err := s.entry(session, now)
	if err != nil {
		return err
	}
	e.expires = now.Add(idle)
	if e.uris[uri] {
		return nil
	}
	if s.total >= maxMemorySessionSubs {
		s.sweep(now)
	}
	if len(e.uris) >= limit || s.total >= maxMemorySessionSubs {
		return ErrSessionSubscriptionLimit
	}
	e.uris[uri] = true
	s.total++
	return nil
}

func (s *memorySessionSubs) Remove(_ context.Context, session, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.live(session, time.Now()); e != nil && e.uris[uri] {
		delete(e.uris, uri)
		s.total--
	}
	return nil
}

func (s *memorySessionSubs) List(_ context.Context, session string, idle time.Duration) ([]string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	e := s.live(session, now)
	if e == nil {
		return nil, "", nil
	}
	e.expires = now.Add(idle)
	out := make([]string, 0, len(e.uris))
	for u := range e.uris {
		out = append(out, u)
	}
	return out, e.holder, nil
}

func (s *memorySessionSubs) Claim(ctx context.Context, session, stream string, idle time.Duration) error {
	s.mu.Lock()
	now := time.Now()
	e, err := s.entry(session, now)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	e.holder, e.expires = stream, now.Add(idle)
	s.mu.Unlock()
	return s.Notify(ctx, session)
}

func (s *memorySessionSubs) Notify(_ context.Context, session string) error {
	select {
	case s.notify <- session:
	default:
	}
	return nil
}

func (s *memorySessionSubs) Serve(ctx context.Context, notified func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-s.notify:
			notified(k)
		}
	}
}
