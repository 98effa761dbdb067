package mcpapi

//lint:file-ignore SA1019 sampling and roots are deprecated by SEP-2577 (2026-07-28) yet still declared by callers on the revisions this file serves

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
)

// Face sessions for the revisions before 2026-07-28. Their callers say
// what they can answer (elicitation, sampling, roots) once, in
// initialize, and the face is stateless: so the answer to an initialize
// carries an Mcp-Session-Id the face mints, which holds the caller's
// binding (subject and authentication method), the negotiated revision,
// the declared capabilities and an expiry, sealed under the round-state
// key files (input.go): every replica lists them, so any replica reads it
// back, nothing is stored, and a caller can neither read nor change it.
// Without key files no session is minted and the header is ignored: a
// per-process random key would make another replica answer the session's
// requests 404, which requests without a session never were. A later request
// carrying it gets the session in its context (sessionFrom); one whose id
// does not open, has expired or is another caller's is answered 404, as
// the streamable HTTP transport says of a session the server no longer
// has (a client must initialize again). Requests without the header are
// served as before: statelessly, with no session. A DELETE of a session
// is answered 405 (the transport's "the server does not allow clients to
// terminate sessions"): a sealed id cannot be revoked before it expires.

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// sessionPurpose binds a sealed session id to this use and format.
const sessionPurpose = "mcp-session/v1"

// maxSessionIDBytes bounds a presented session id before it is opened: the
// face's are about 250 bytes (a long subject is bounded to 256 bytes).
const maxSessionIDBytes = 1024

// DefaultSessionTTL is a session's lifetime unless Config.SessionTTL says.
const DefaultSessionTTL = 24 * time.Hour

// maxSessionSubjectBytes bounds the subject a session carries: a longer
// one gets no session (its requests stay stateless).
const maxSessionSubjectBytes = 256

// faceSession is what a sealed session id holds.
type faceSession struct {
	Subject string `json:"s"`
	Method  string `json:"m"`
	// Revision is the protocol revision initialize negotiated.
	Revision string `json:"v"`
	// What the caller declared it can answer.
	ElicitForm bool  `json:"ef,omitempty"`
	ElicitURL  bool  `json:"eu,omitempty"`
	Sampling   bool  `json:"sa,omitempty"`
	Roots      bool  `json:"ro,omitempty"`
	Issued     int64 `json:"i"` // Unix seconds
	Expires    int64 `json:"e"` // Unix seconds
}

// sessionCaps is what caps declares of elicitation, sampling and roots.
// An elicitation capability naming neither mode is form (2025-06-18
// knows no modes; 2025-11-25 reads an empty one as form).
func sessionCaps(s *faceSession, caps *mcp.ClientCapabilities) {
	if caps == nil {
		return
	}
	if e := caps.Elicitation; e != nil {
		s.ElicitForm = e.Form != nil || e.URL == nil
		s.ElicitURL = e.URL != nil
	}
	s.Sampling = caps.Sampling != nil
	s.Roots = caps.RootsV2 != nil
}

type sessionCtxKey struct{}

// sessionFrom is the face session of the request ctx belongs to, or nil.
func sessionFrom(ctx context.Context) *faceSession {
	s, _ := ctx.Value(sessionCtxKey{}).(*faceSession)
	return s
}

// checkSession opens the session id a request carries (headers only, after
// authentication): a valid one goes into the request's context; any other
// ends the request with 404.
func (m *Server) checkSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		if id == "" || m.input().Keys == nil {
			// No key files: the face has no sessions and ignores the
			// header, as it always did.
			next.ServeHTTP(w, r)
			return
		}
		s, why := m.openSession(r.Context(), id)
		if s == nil {
			m.refuseHTTP(w, r, "session not found: "+why+"; initialize again", http.StatusNotFound, "session-unknown")
			return
		}
		// A request is answered under its MCP-Protocol-Version header even
		// when that is not the session's revision: clients send another
		// (the conformance suite's 2025-11-25 scenarios send 2025-03-26),
		// and the stateless face always served them so.
		if r.Method == http.MethodDelete {
			w.Header().Set("Allow", "POST")
			m.refuseHTTP(w, r, "this server does not terminate sessions; the session id expires on its own", http.StatusMethodNotAllowed, "session-delete")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionCtxKey{}, s)))
	})
}

// openSession is the session a presented id holds for the request's
// caller, or nil and why not (in words that tell the caller nothing of the
// id's content: it is refused whole).
func (m *Server) openSession(ctx context.Context, id string) (*faceSession, string) {
	if len(id) > maxSessionIDBytes {
		return nil, "not one this gateway issued"
	}
	keys := m.input().Keys
	if keys == nil {
		return nil, "not one this gateway issued"
	}
	plain, err := keys.Open(sessionPurpose, id)
	if err != nil {
		return nil, "not one this gateway issued"
	}
	var s faceSession
	if json.Unmarshal(plain, &s) != nil {
		return nil, "not one this gateway issued"
	}
	if time.Now().Unix() > s.Expires {
		return nil, "expired"
	}
	caller, _ := policy.CallerFrom(ctx)
	if s.Subject != caller.Subject || s.Method != caller.Method {
		// Not told apart from an unknown id: it names nobody's session to
		// this caller.
		return nil, "not one this gateway issued"
	}
	return &s, ""
}

// sessionMint carries a minted id from the initialize handler (which sees
// the negotiated revision and the declared capabilities) to the HTTP
// answer's headers, which the SDK writes after the handler returns.
type sessionMint struct {
	mu sync.Mutex
	id string
}

type sessionMintKey struct{}

// sessionMintWriter sets the minted id on the answer as its headers are
// written.
type sessionMintWriter struct {
	http.ResponseWriter
	mint *sessionMint
	done bool
}

func (w *sessionMintWriter) setHeader() {
	if w.done {
		return
	}
	w.done = true
	w.mint.mu.Lock()
	id := w.mint.id
	w.mint.mu.Unlock()
	if id != "" {
		w.Header().Set(sessionHeader, id)
	}
}

func (w *sessionMintWriter) WriteHeader(code int) {
	w.setHeader()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionMintWriter) Write(b []byte) (int, error) {
	w.setHeader()
	return w.ResponseWriter.Write(b)
}

func (w *sessionMintWriter) Flush() {
	w.setHeader()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sessionMintWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withSessionMint prepares a request the SDK answers for minting: one
// without a session whose body may be an initialize (the handler decides).
func withSessionMint(w http.ResponseWriter, r *http.Request, body []byte) (http.ResponseWriter, *http.Request) {
	if sessionFrom(r.Context()) != nil || !mayBeInitialize(body) {
		return w, r
	}
	mint := &sessionMint{}
	return &sessionMintWriter{ResponseWriter: w, mint: mint}, r.WithContext(context.WithValue(r.Context(), sessionMintKey{}, mint))
}

// mayBeInitialize: body names the method initialize (a cheap test; the
// SDK decodes the message and the handler sees what it is).
func mayBeInitialize(body []byte) bool {
	return bytes.Contains(body, []byte(`"initialize"`))
}

// mintSessions runs around every method the SDK receives: an initialize
// answered under a revision before 2026-07-28 gets a session id minted
// for its caller.
func (m *Server) mintSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		mint, _ := ctx.Value(sessionMintKey{}).(*sessionMint)
		ir, ok := res.(*mcp.InitializeResult)
		params, _ := req.GetParams().(*mcp.InitializeParams)
		if mint == nil || !ok || ir == nil || params == nil || ir.ProtocolVersion >= RevisionResultType {
			return res, err
		}
		if id := m.sealSession(ctx, ir.ProtocolVersion, params.Capabilities); id != "" {
			mint.mu.Lock()
			mint.id = id
			mint.mu.Unlock()
		}
		return res, err
	}
}

// sealSession is a new session id for the request's caller, or "" when
// there is none to give: no key files, or a subject too long to carry.
func (m *Server) sealSession(ctx context.Context, rev string, caps *mcp.ClientCapabilities) string {
	keys := m.input().Keys
	caller, _ := policy.CallerFrom(ctx)
	if keys == nil || len(caller.Subject) > maxSessionSubjectBytes {
		return ""
	}
	now := time.Now()
	s := faceSession{Subject: caller.Subject, Method: caller.Method, Revision: rev,
		Issued: now.Unix(), Expires: now.Add(m.sessionTTL).Unix()}
	sessionCaps(&s, caps)
	plain, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return keys.Seal(sessionPurpose, plain)
}
