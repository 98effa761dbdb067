package console

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/policyreload"
	"github.com/flowdrop/gateway/server/repairstats"
	"github.com/flowdrop/gateway/server/replay"
)

// Config is what the console reads and changes, given by the gateway.
type Config struct {
	Registry *registry.Registry
	// Authenticate identifies a login's credential with the authenticator
	// in force.
	Authenticate func(context.Context, policy.Credentials) (policy.Caller, error)
	// PolicyHash is the policy in force's hash: a session ends when it
	// changes.
	PolicyHash func() string
	// ReloadHistory lists the policy reloads (policyreload.Reloader.History).
	ReloadHistory func() []policyreload.Event
	// Status is the status page's content (readiness, store, tools with
	// their counters and last errors).
	Status func() observe.Status
	// ShadowDenials are flowdrop_policy_shadow_denials_total's series.
	ShadowDenials func() []observe.Series
	// Upstreams is the health of each upstream MCP server tools are
	// imported from (mcpfollow.Follower.Health; nil: none shown).
	Upstreams func() []observe.UpstreamHealth
	// Ejections reports a tool's balanced backend's ejections (ok: it has
	// a balanced connection open).
	Ejections func(*registry.Tool) (total uint64, ejected int, ok bool)
	// Preview runs the normalize and validate stages offline
	// (pipeline.Pipeline.Preview).
	Preview func(context.Context, *registry.Entry, string) pipeline.Preview
	// Approve and Reject apply a tool's pending upstream change at the
	// revision the admin reviewed, recording the audit line as caller.
	Approve, Reject func(ctx context.Context, caller policy.Caller, tool string, revision int64) error
	// Invoke calls a tool through the whole pipeline as the invocation's
	// caller (the try-it panel's Invoke); nil: the console does not invoke.
	Invoke func(context.Context, Invocation) Answer
	// MayInvoke reports whether the policy in force lets caller call tool
	// (its roles and allow/deny lists): what lets a viewer session Invoke.
	MayInvoke func(ctx context.Context, caller policy.Caller, tool string) bool
	// InvokeTimeout bounds an Invoke (0: DefaultInvokeTimeout).
	InvokeTimeout time.Duration
	// RepairStats is the repair analytics of a tool (every tool's for
	// ""): repairstats.Stats.Snapshot. Nil: the page says none are kept.
	RepairStats func(tool string) repairstats.Snapshot
	// Replay replays audit lines against a pasted candidate policy and
	// tools file (none: the tools served now); a refusal of the candidate
	// is a *ReplayError.
	Replay func(ctx context.Context, policy, tools, audit []byte) (*replay.Report, error)
	// AuditPath is the audit log file ("" or "-": not a file, no tail).
	AuditPath string
	// Sessions keeps the sessions (nil: this process's memory). The
	// gateway gives Redis's when configured, so every replica knows every
	// login; a store that does not answer stops the console (503).
	Sessions SessionStore
	Log      *slog.Logger
}

// Console serves the console's pages; Handler mounts them.
type Console struct {
	cfg      Config
	sessions SessionStore
	// retire are policies that left force whose sessions the store has
	// not yet ended (it did not answer): retried before every request.
	retireMu sync.Mutex
	retire   []string
	// storeDown: the store's last answer was an error (its outage is
	// logged once, and its return).
	storeDown atomic.Bool
	// failedLogins bounds the credential checks failed logins may cost
	// (JWT verification, key hashing) and slows guessing, per source and
	// in all (login_limit.go): past either a login is answered 429 until
	// its bucket refills.
	failedLogins *loginLimits
	now          func() time.Time
}

// New is a console over cfg.
func New(cfg Config) *Console {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	store := cfg.Sessions
	if store == nil {
		store = NewMemorySessions()
	}
	return &Console{cfg: cfg, sessions: store, failedLogins: newLoginLimits(), now: time.Now}
}

// storeUnavailable is the page every request gets while the session store
// does not answer: no login, no page, never a per-process fallback (a
// session logged out on another replica would live on here).
const storeUnavailable = "the console's session store is not answering: no login and no page until it does (the gateway's log says why)"

// stored notes the store's answer, logging an outage's start and end.
func (c *Console) stored(err error) error {
	if err != nil {
		if !c.storeDown.Swap(true) {
			c.cfg.Log.Error("console: the session store is not answering: the console answers 503", "error", err.Error())
		}
		return err
	}
	if c.storeDown.Swap(false) {
		c.cfg.Log.Info("console: the session store answers again")
	}
	return nil
}

// PolicyLeft ends every session logged in under the policy policyHash
// (it left force on this replica): fleet-wide with a shared store, so a
// replica still on that policy refuses them too. Not answered now, it is
// retried before each of this replica's console requests, which fail
// (503) until it lands.
func (c *Console) PolicyLeft(ctx context.Context, policyHash string) {
	c.retireMu.Lock()
	if !slices.Contains(c.retire, policyHash) {
		c.retire = append(c.retire, policyHash)
	}
	c.retireMu.Unlock()
	if err := c.retirePending(ctx); err != nil {
		c.cfg.Log.Error("console: the sessions under the previous policy could not be ended fleet-wide yet; retried at this replica's next console request",
			"policy_sha256", policyHash, "error", err.Error())
	}
}

// maxRetire bounds the retirements kept pending: past it the oldest is
// dropped (its sessions are older than the lifetime's worth of reloads).
const maxRetire = 64

func (c *Console) retirePending(ctx context.Context) error {
	c.retireMu.Lock()
	defer c.retireMu.Unlock()
	if len(c.retire) > maxRetire {
		c.retire = c.retire[len(c.retire)-maxRetire:]
	}
	for len(c.retire) > 0 {
		if err := c.stored(c.sessions.Retire(ctx, c.retire[0])); err != nil {
			return err
		}
		c.retire = c.retire[1:]
	}
	return nil
}

// lookup is the request's live session, touched; an error means the
// store did not answer.
func (c *Console) lookup(r *http.Request) (session, bool, error) {
	if err := c.retirePending(r.Context()); err != nil {
		return session{}, false, err
	}
	key, ok := cookieKey(r)
	if !ok {
		return session{}, false, nil
	}
	payload, ok, err := c.sessions.Lookup(r.Context(), key, c.cfg.PolicyHash(), c.now())
	if c.stored(err) != nil || !ok {
		return session{}, false, err
	}
	ses, err := decodeSession(key, payload)
	if err != nil {
		c.cfg.Log.Error("console: a stored session does not decode: ended", "error", err.Error())
		c.stored(c.sessions.End(r.Context(), key))
		return session{}, false, nil
	}
	return ses, true, nil
}

// maxFormBytes bounds a POST's body (the try-it panel's arguments are
// bounded again by the policy's argument limits while they parse).
const maxFormBytes = 1 << 20

// csp allows the console's own stylesheet and nothing else: no script at
// all, no frame, no form target but the console.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html static/console.css
var files embed.FS

// Handler serves the console under /console/.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/static/console.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		b, _ := files.ReadFile("static/console.css")
		w.Write(b)
	})
	mux.HandleFunc("GET /console/login", c.loginPage)
	mux.HandleFunc("POST /console/login", c.login)
	mux.HandleFunc("POST /console/logout", c.viewer(c.logout))
	mux.HandleFunc("GET /console/{$}", c.viewer(c.overview))
	mux.HandleFunc("GET /console/tools", c.viewer(c.catalog))
	mux.HandleFunc("GET /console/tools/{name}", c.viewer(c.tool))
	mux.HandleFunc("POST /console/tools/{name}/try", c.viewer(c.try))
	// Viewers too: invoke admits a viewer only when the policy lets its
	// principal call the tool (mayInvoke).
	mux.HandleFunc("POST /console/tools/{name}/invoke", c.viewer(c.invoke))
	mux.HandleFunc("GET /console/pending", c.viewer(c.pending))
	mux.HandleFunc("POST /console/pending/{name}/approve", c.admin(c.decide(true)))
	mux.HandleFunc("POST /console/pending/{name}/reject", c.admin(c.decide(false)))
	mux.HandleFunc("GET /console/audit", c.viewer(c.audit))
	mux.HandleFunc("GET /console/repairs", c.viewer(c.repairs))
	mux.HandleFunc("GET /console/replay", c.admin(c.replayForm))
	mux.HandleFunc("POST /console/replay", c.admin(c.replayRun))
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	})
	// Browsers say where a request comes from (Sec-Fetch-Site, Origin): a
	// cross-site POST is refused before any handler, login included.
	xo := http.NewCrossOriginProtection()
	protected := xo.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		protected.ServeHTTP(w, r)
	})
}

// handler is a page handler given the request's session.
type handler func(http.ResponseWriter, *http.Request, session)

// viewer admits a live session (viewer or admin); a POST must carry its
// CSRF token. Without a session a GET is sent to the login page.
func (c *Console) viewer(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ses, ok, err := c.lookup(r)
		if err != nil {
			c.fail(w, r, nil, http.StatusServiceUnavailable, storeUnavailable)
			return
		}
		if !ok {
			http.SetCookie(w, cookie(r, nil))
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/console/login", http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, http.StatusUnauthorized, "not logged in (or the session ended): log in again")
			return
		}
		if r.Method == http.MethodPost && !ses.csrfOK(r.PostFormValue("csrf")) {
			c.fail(w, r, &ses, http.StatusForbidden, "the form's CSRF token is missing or not this session's: reload the page and try again")
			return
		}
		h(w, r, ses)
	}
}

// admin is viewer for the admin role only.
func (c *Console) admin(h handler) http.HandlerFunc {
	return c.viewer(func(w http.ResponseWriter, r *http.Request, ses session) {
		if !ses.admin {
			c.fail(w, r, &ses, http.StatusForbidden, "this needs the admin role; the session holds the viewer role (read-only)")
			return
		}
		h(w, r, ses)
	})
}

// view is what every page's layout shows besides its own content.
type view struct {
	Title   string
	Nav     string
	Subject string
	Admin   bool
	CSRF    string
	Error   string
	Notice  string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, status int, p *page, v view) {
	var b strings.Builder
	if err := p.template().ExecuteTemplate(&b, "layout", v); err != nil {
		c.cfg.Log.Error("console page failed to render", "page", v.Nav, "error", err.Error())
		http.Error(w, "the page failed to render (see the gateway's log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}

func (ses *session) view(title, nav string, data any) view {
	return view{Title: title, Nav: nav, Subject: ses.subject, Admin: ses.admin, CSRF: ses.csrf, Data: data}
}

// fail answers an error page (the layout, or the login page's without a
// session).
func (c *Console) fail(w http.ResponseWriter, _ *http.Request, ses *session, status int, msg string) {
	v := view{Title: http.StatusText(status), Nav: "error", Error: msg}
	if ses != nil {
		v = ses.view(http.StatusText(status), "error", nil)
		v.Error = msg
	}
	c.render(w, status, pages.errorPage, v)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	_, ok, err := c.lookup(r)
	if err == nil && !ok {
		err = c.stored(c.sessions.Ping(r.Context()))
	}
	if err != nil {
		c.fail(w, r, nil, http.StatusServiceUnavailable, storeUnavailable)
		return
	}
	if ok {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.render(w, http.StatusOK, pages.login, view{Title: "Log in", Nav: "login"})
}

// login authenticates the pasted credential as a bearer token (an API key
// or a JWT, as the MCP face takes them) with the policy in force and
// admits the admin and viewer roles.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	cred := strings.TrimSpace(r.PostFormValue("credential"))
	refuse := func(status int, msg string) {
		c.render(w, status, pages.login, view{Title: "Log in", Nav: "login", Error: msg})
	}
	if err := c.retirePending(r.Context()); err != nil {
		refuse(http.StatusServiceUnavailable, storeUnavailable)
		return
	}
	src := source(r)
	if why := c.failedLogins.refused(src, c.now()); why != "" {
		refuse(http.StatusTooManyRequests, why)
		return
	}
	caller, err := c.cfg.Authenticate(r.Context(), policy.Credentials{Bearer: cred})
	if err != nil {
		c.failedLogins.failed(src, c.now())
		msg := "the credential was not accepted"
		var pe *policy.Error
		if errors.As(err, &pe) {
			msg += ": " + pe.Message // the policy's reason; it never echoes the credential
		}
		refuse(http.StatusUnauthorized, msg)
		return
	}
	admin := caller.HasRole(policy.RoleAdmin)
	if !admin && !caller.HasRole(policy.RoleViewer) {
		c.failedLogins.failed(src, c.now())
		refuse(http.StatusForbidden, "this credential holds neither the admin nor the viewer role")
		return
	}
	ses, payload, err := newSession(caller, admin)
	if err == nil {
		err = c.stored(c.sessions.Create(r.Context(), ses.key, payload, c.cfg.PolicyHash(), c.now()))
	}
	if err != nil {
		refuse(http.StatusServiceUnavailable, storeUnavailable)
		return
	}
	http.SetCookie(w, cookie(r, ses))
	c.cfg.Log.Info("console login", "subject", caller.Subject, "method", caller.Method, "admin", admin)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, ses session) {
	if c.stored(c.sessions.End(r.Context(), ses.key)) != nil {
		c.fail(w, r, &ses, http.StatusServiceUnavailable, "the session could not be ended: the console's session store is not answering; log out again once it does (the gateway's log says why)")
		return
	}
	http.SetCookie(w, cookie(r, nil))
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}
