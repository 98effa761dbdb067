package console

import (
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// Session bounds: how many live sessions the console keeps (a login past
// it ends the least recently used), and how long one lives.
const (
	MaxSessions       = 256
	SessionIdle       = 30 * time.Minute
	SessionLifetime   = 12 * time.Hour
	sessionCookieName = "flowdrop_console"
	cookiePath        = "/console/"
)

// session is one logged-in operator: who, what they may do, and the token
// each of their POSTs must carry.
type session struct {
	id         string
	subject    string
	method     string
	roles      []string // the principal's roles: a console Invoke is its call
	admin      bool     // admin role; otherwise viewer (read-only)
	csrf       string
	policyHash string // the policy in force at login
	// tokenExpiry is when the bearer token logged in with expires (zero:
	// an API key, or a token without one): no Invoke past it.
	tokenExpiry time.Time
	created     time.Time
	lastSeen    time.Time
}

// sessions are the live sessions, by id (a 128-bit random text).
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

// create records a session for caller, ending the least recently used one
// when MaxSessions are live.
func (s *sessions) create(caller policy.Caller, admin bool, policyHash string, now time.Time) *session {
	ses := &session{id: rand.Text(), subject: caller.Subject, method: caller.Method, roles: caller.Roles, admin: admin,
		csrf: rand.Text(), policyHash: policyHash, created: now, lastSeen: now}
	if caller.Token != nil {
		ses.tokenExpiry = caller.Token.Expiry
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*session{}
	}
	for id, o := range s.m {
		if o.expired(now, "") {
			delete(s.m, id)
		}
	}
	if len(s.m) >= MaxSessions {
		victims := make([]*session, 0, len(s.m))
		for _, o := range s.m {
			victims = append(victims, o)
		}
		oldest := slices.MinFunc(victims, func(a, b *session) int { return a.lastSeen.Compare(b.lastSeen) })
		delete(s.m, oldest.id)
	}
	s.m[ses.id] = ses
	return ses
}

// expired: idle too long, alive too long, or logged in under another
// policy ("" skips that check).
func (ses *session) expired(now time.Time, policyHash string) bool {
	return now.Sub(ses.lastSeen) > SessionIdle || now.Sub(ses.created) > SessionLifetime ||
		(policyHash != "" && policyHash != ses.policyHash)
}

// lookup returns the request's live session (a copy), touching it; an
// expired one is ended.
func (s *sessions) lookup(r *http.Request, now time.Time, policyHash string) (session, bool) {
	c, err := r.Cookie(sessionCookieName)
	if err != nil || c.Value == "" {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.m[c.Value]
	if !ok {
		return session{}, false
	}
	if ses.expired(now, policyHash) {
		delete(s.m, ses.id)
		return session{}, false
	}
	ses.lastSeen = now
	return *ses, true
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// csrfOK reports whether a POST's token is its session's (constant time).
func (ses session) csrfOK(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(ses.csrf)) == 1
}

// cookie is the session's cookie (expired when ses is nil): HttpOnly,
// SameSite=Strict, Secure when the listener serves TLS, scoped to the
// console.
func cookie(r *http.Request, ses *session) *http.Cookie {
	c := &http.Cookie{Name: sessionCookieName, Path: cookiePath, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if ses == nil {
		c.MaxAge = -1
		return c
	}
	c.Value = ses.id
	c.MaxAge = int(SessionLifetime / time.Second)
	return c
}

// caller is the session's principal as an audit line names it and as the
// console's Invoke calls a tool: its subject, method and roles, never a
// bearer token (a session keeps none).
func (ses session) caller() policy.Caller {
	return policy.Caller{Subject: ses.subject, Method: ses.method, Roles: ses.roles}
}
