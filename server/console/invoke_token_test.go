package console

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

// TestInvokeNeedsALiveToken: a session logged in with a bearer token may
// read pages until the session ends, but Invoke calls the tool as the
// principal, so it is refused (401, no call) once the token has expired;
// an API key's session (no expiry) is not affected.
func TestInvokeNeedsALiveToken(t *testing.T) {
	ctx := context.Background()
	tools, err := registry.ParseTools(demotools.ToolsYAML("127.0.0.1:1"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := registry.Seed(ctx, store, tools); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(store)
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, reason string
		token        *policy.Bearer
		after        time.Duration
		status       int
		calls        int
	}{
		{"live token", "the token is valid: the call is made", policy.NewBearer("t", nil, t0.Add(10*time.Minute)), 5 * time.Minute, http.StatusOK, 1},
		{"expired token", "past the token's exp: refused, no call", policy.NewBearer("t", nil, t0.Add(10*time.Minute)), 11 * time.Minute, http.StatusUnauthorized, 0},
		{"api key", "no token, no expiry", nil, 11 * time.Minute, http.StatusOK, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := t0
			calls := 0
			con := New(Config{
				Registry: reg,
				Authenticate: func(context.Context, policy.Credentials) (policy.Caller, error) {
					return policy.Caller{Subject: "ops", Method: policy.MethodJWT, Roles: []string{policy.RoleAdmin, policy.RoleInvoker}, Token: c.token}, nil
				},
				PolicyHash: func() string { return "h" },
				Invoke: func(context.Context, Invocation) Answer {
					calls++
					return Answer{Result: []byte(`{"result":"ok"}`)}
				},
				Log: slog.New(slog.DiscardHandler),
			})
			con.now = func() time.Time { return now }
			h := con.Handler()
			post := func(path string, form url.Values, cookie *http.Cookie) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if cookie != nil {
					r.AddCookie(cookie)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			w := post("/console/login", url.Values{"credential": {"x"}}, nil)
			cookies := w.Result().Cookies()
			if w.Code != http.StatusSeeOther || len(cookies) == 0 {
				t.Fatalf("login = %d", w.Code)
			}
			ses, ok, err := con.lookup(withCookie(cookies[0].Value))
			if !ok || err != nil {
				t.Fatalf("no session after login (%v)", err)
			}
			now = now.Add(c.after)
			// Keep the session alive past the idle bound for the longer waits.
			con.sessions.(*memorySessions).m[ses.key].lastSeen = now
			w = post("/console/tools/create_note/invoke", url.Values{"arguments": {`{"title":"x"}`}, "csrf": {ses.csrf}}, cookies[0])
			if w.Code != c.status || calls != c.calls {
				t.Errorf("invoke = %d with %d calls, want %d with %d (%s):\n%.1500s", w.Code, calls, c.status, c.calls, c.reason, w.Body.String())
			}
		})
	}
}
