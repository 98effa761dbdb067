package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// Session bounds: how many live sessions the console keeps (a login past
// it ends the least recently used), and how long one lives. With a shared
// store (Redis) the bound is the fleet's.
const (
	MaxSessions       = 256
	SessionIdle       = 30 * time.Minute
	SessionLifetime   = 12 * time.Hour
	sessionCookieName = "flowdrop_console"
	cookiePath        = "/console/"
	// sessionIDBytes is a session id's randomness (256 bits); the cookie
	// carries it as unpadded base64url.
	sessionIDBytes = 32
	// maxSessionPayload bounds a stored session's record as read back: a
	// store is trusted no more than any input.
	maxSessionPayload = 64 << 10
)

var sessionIDLen = base64.RawURLEncoding.EncodedLen(sessionIDBytes)

// SessionStore keeps the console's sessions: this process's memory
// (NewMemorySessions), or Redis shared by every replica
// (redisstate.ConsoleSessions). A store sees only the hash of a session's
// id (its key), never the id the cookie carries. An error means the store
// did not answer: the console then refuses (503), never falls back.
type SessionStore interface {
	// Create stores a session logged in at now under the policy
	// policyHash, ending the least recently used past MaxSessions.
	Create(ctx context.Context, key string, payload []byte, policyHash string, now time.Time) error
	// Lookup is the payload of key's live session, touched at now: idle
	// or alive too long, logged in under another policy than policyHash
	// or under a retired one, it is ended and not found.
	Lookup(ctx context.Context, key, policyHash string, now time.Time) (payload []byte, ok bool, err error)
	// End ends key's session.
	End(ctx context.Context, key string) error
	// Retire ends every session logged in under policyHash so far: that
	// policy left force.
	Retire(ctx context.Context, policyHash string) error
	// Ping checks the store answers: the login form is offered only then.
	Ping(ctx context.Context) error
}

// session is one logged-in operator: who, what they may do, and the token
// each of their POSTs must carry.
type session struct {
	key     string // the store's key: the hash of the cookie's id
	id      string // the cookie's value (set at login only)
	subject string
	method  string
	roles   []string // the principal's roles: a console Invoke is its call
	admin   bool     // admin role; otherwise viewer (read-only)
	csrf    string
	// tokenExpiry is when the bearer token logged in with expires (zero:
	// an API key, or a token without one): no Invoke past it.
	tokenExpiry time.Time
}

// record is a session as stored (the payload): no id, no bearer token.
type record struct {
	Subject     string   `json:"s"`
	Method      string   `json:"m"`
	Roles       []string `json:"r,omitempty"`
	Admin       bool     `json:"a,omitempty"`
	CSRF        string   `json:"c"`
	TokenExpiry int64    `json:"t,omitempty"` // Unix ms
}

// sessionKey is the store's key for a session id: its SHA-256, so what a
// store holds (a Redis dump) is no cookie.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// newSession is a session for caller with a fresh random id and CSRF
// token, and its payload.
func newSession(caller policy.Caller, admin bool) (*session, []byte, error) {
	var raw [sessionIDBytes]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	ses := &session{key: sessionKey(id), id: id, subject: caller.Subject, method: caller.Method, roles: caller.Roles, admin: admin, csrf: rand.Text()}
	rec := record{Subject: ses.subject, Method: ses.method, Roles: ses.roles, Admin: admin, CSRF: ses.csrf}
	if caller.Token != nil && !caller.Token.Expiry.IsZero() {
		ses.tokenExpiry = caller.Token.Expiry
		rec.TokenExpiry = caller.Token.Expiry.UnixMilli()
	}
	b, err := json.Marshal(rec)
	return ses, b, err
}

// errBadRecord: a stored session does not decode (the session is ended).
var errBadRecord = errors.New("a stored console session does not decode")

func decodeSession(key string, payload []byte) (session, error) {
	var rec record
	if len(payload) > maxSessionPayload || json.Unmarshal(payload, &rec) != nil || rec.CSRF == "" {
		return session{}, errBadRecord
	}
	ses := session{key: key, subject: rec.Subject, method: rec.Method, roles: rec.Roles, admin: rec.Admin, csrf: rec.CSRF}
	if rec.TokenExpiry != 0 {
		ses.tokenExpiry = time.UnixMilli(rec.TokenExpiry)
	}
	return ses, nil
}

// cookieKey is the store's key for the request's session cookie; ok is
// false without a cookie of a session id's form (no store is asked).
func cookieKey(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookieName)
	if err != nil || len(c.Value) != sessionIDLen {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(c.Value); err != nil {
		return "", false
	}
	return sessionKey(c.Value), true
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
