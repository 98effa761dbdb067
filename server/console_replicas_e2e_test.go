package server_test

// The console's sessions across replicas (issue 34, item 1): two gateway
// replicas sharing a real redis-server keep one set of sessions.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/console"
)

// consoleFleet is two replicas (A, B) with the admin listener and the
// console's policy, on rs.
func consoleFleet(t *testing.T, rs *redistest.Server, configure ...func(*server.Config)) (server.PolicyConfig, []*gatewaytest.Env) {
	t.Helper()
	p, _ := consolePolicy(t) // one policy (and audit file) for both: one hash
	replica := func() *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(),
			gatewaytest.WithConfig(func(c *server.Config) {
				c.Redis.Addr = rs.Addr()
				for _, f := range configure {
					f(c)
				}
			}))
	}
	return p, []*gatewaytest.Env{replica(), replica()}
}

// on points u at env (the cookie jar holds for 127.0.0.1, any port, as a
// browser behind a load balancer would hold it for the balancer's name).
func (u *consoleUser) on(env *gatewaytest.Env) *consoleUser {
	u.base = env.AdminURL
	return u
}

// loggedIn reports whether u's session admits a page on u's replica (a
// 303 to the login page: not logged in).
func (u *consoleUser) loggedIn() bool {
	u.t.Helper()
	resp, body := u.do(http.MethodGet, "/console/", nil, nil)
	switch {
	case resp.StatusCode == http.StatusOK && strings.Contains(body, `id="who"`):
		return true
	case resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/console/login":
		return false
	}
	u.t.Fatalf("GET /console/ = %d:\n%.1500s", resp.StatusCode, body)
	return false
}

// TestConsoleSessionsAcrossReplicas: with Redis, a login on A holds on B;
// a logout on B ends it on A; a policy reload on A ends the sessions made
// under the old policy on B too, and a session made under another policy
// than a replica's is refused there; a Redis dump holds no cookie.
func TestConsoleSessionsAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	p, envs := consoleFleet(t, rs)
	a, b := envs[0], envs[1]

	t.Run("login A, use B, logout B, refused on A", func(t *testing.T) {
		u := newConsoleUser(t, a)
		u.login(keyAdmin)
		if !u.on(b).loggedIn() {
			t.Fatal("the session made on A is unknown on B")
		}
		if st, body := u.on(b).post("/console/logout", url.Values{}); st != http.StatusSeeOther {
			t.Fatalf("logout on B = %d:\n%.1500s", st, body)
		}
		if u.on(a).loggedIn() {
			t.Error("the session logged out on B still admits on A")
		}
	})

	t.Run("no cookie in Redis", func(t *testing.T) {
		u := newConsoleUser(t, a)
		u.login(keyViewer)
		var id string
		base, _ := url.Parse(a.AdminURL + "/console/")
		for _, c := range u.c.Jar.Cookies(base) {
			if c.Name == "flowdrop_console" {
				id = c.Value
			}
		}
		if len(id) != 43 {
			t.Fatalf("session cookie %q: want a 256-bit id (43 base64url characters)", id)
		}
		rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
		defer rdb.Close()
		ctx := context.Background()
		keys, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		var sessions int
		for _, k := range keys {
			dump, _ := rdb.Dump(ctx, k).Result()
			if strings.Contains(k, id) || strings.Contains(dump, id) {
				t.Errorf("Redis key %q holds the session id", k)
			}
			if strings.HasPrefix(k, "flowdrop:{console}:s:") {
				sessions++
			}
		}
		if sessions == 0 {
			t.Errorf("no session key in Redis (keys %q): the session is not kept there", keys)
		}
	})

	t.Run("policy reload on A ends sessions on B", func(t *testing.T) {
		u := newConsoleUser(t, b)
		u.login(keyViewer)
		next := p
		next.Authz.Callers = map[string]policy.ToolAccess{"limited": {Allow: []string{"create_note"}, Mode: policy.ModeShadow}}
		if err := a.Gateway.ReloadPolicy(next); err != nil {
			t.Fatal(err)
		}
		if u.on(b).loggedIn() {
			t.Error("a session made under the old policy still admits on B (still on it) after A's reload")
		}
		// Logged in on B under the old policy B still holds: refused on A.
		u.on(b).login(keyViewer)
		if u.on(a).loggedIn() {
			t.Error("a session made under the old policy admits on A, which reloaded")
		}
		// B reloads the same policy (a shared file): one policy again.
		u.on(b).login(keyViewer)
		if err := b.Gateway.ReloadPolicy(next); err != nil {
			t.Fatal(err)
		}
		if u.on(b).loggedIn() {
			t.Error("B's reload left a session made under its old policy")
		}
		u.on(b).login(keyViewer)
		if !u.on(a).loggedIn() {
			t.Error("with one policy again, a login on B is unknown on A")
		}
	})
}

// TestConsoleSessionsRedisDown: while Redis does not answer the console
// refuses every login and page (503 with a page saying why, no Redis
// address), never falling back to this process's memory; once it answers
// again logins work.
func TestConsoleSessionsRedisDown(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	_, envs := consoleFleet(t, rs)
	a := envs[0]
	u := newConsoleUser(t, a)
	u.login(keyAdmin)
	rs.Stop()
	for _, c := range []struct {
		name, reason string
		do           func() (*http.Response, string)
	}{
		{"page", "a logged-in session's page", func() (*http.Response, string) { return u.do(http.MethodGet, "/console/tools", nil, nil) }},
		{"login page", "the login form", func() (*http.Response, string) {
			return newConsoleUser(t, a).do(http.MethodGet, "/console/login", nil, nil)
		}},
		{"login", "a login with a good credential", func() (*http.Response, string) {
			return newConsoleUser(t, a).do(http.MethodPost, "/console/login", url.Values{"credential": {keyAdmin}}, nil)
		}},
		{"logout", "a logout cannot end the session fleet-wide", func() (*http.Response, string) {
			return u.do(http.MethodPost, "/console/logout", url.Values{"csrf": {u.csrf}}, nil)
		}},
	} {
		resp, body := c.do()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "session store is not answering") {
			t.Errorf("%s with Redis stopped = %d, want 503 saying the session store is not answering (%s):\n%.1500s", c.name, resp.StatusCode, c.reason, body)
		}
		if strings.Contains(body, rs.Addr()) || strings.Contains(body, "connection refused") {
			t.Errorf("%s: the page names Redis's address or the error", c.name)
		}
		for _, ck := range resp.Cookies() {
			if ck.Name == "flowdrop_console" && ck.Value != "" {
				t.Errorf("%s: a session cookie was set with Redis stopped", c.name)
			}
		}
	}
	rs.Restart() // empty: every session is gone
	if u.loggedIn() {
		t.Error("a session admits after Redis came back empty")
	}
	u.login(keyAdmin)
}

// TestConsoleSessionsBoundedAcrossReplicas: the bound is the fleet's:
// MaxSessions logins spread over A and B, then one more, ends only the
// least recently used.
func TestConsoleSessionsBoundedAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	_, envs := consoleFleet(t, rs)
	users := make([]*consoleUser, console.MaxSessions+1)
	for i := range users {
		users[i] = newConsoleUser(t, envs[i%2])
		resp, body := users[i].do(http.MethodPost, "/console/login", url.Values{"credential": {keyViewer}}, nil)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login %d = %d:\n%.1000s", i, resp.StatusCode, body)
		}
		if i == 1 {
			// The first is used now (on the other replica): the second is the
			// least recently used when the bound is reached.
			if !users[0].on(envs[1]).loggedIn() {
				t.Fatal("the first session is not live")
			}
		}
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, console.MaxSessions: true} {
		if got := users[i].on(envs[(i+1)%2]).loggedIn(); got != want {
			t.Errorf("session %d live = %t, want %t (%d logins over two replicas: only the least recently used ends)", i, got, want, console.MaxSessions+1)
		}
	}
}

// TestConsoleSessionsRetireRetried: a policy reload on A while Redis does
// not answer cannot mark the old policy's sessions ended; A keeps the
// mark and lands it at its next console request once Redis answers, so
// the session made on B (still on the old policy) ends then.
func TestConsoleSessionsRetireRetried(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	// 2 s a command: the paused writes fail past it, and once Redis
	// answers again a loaded machine's slow reconnect does not fail A's
	// request (the default 100 ms did, under a full race run).
	p, envs := consoleFleet(t, rs, func(c *server.Config) { c.Redis.Timeout = 2 * time.Second })
	a, b := envs[0], envs[1]
	u := newConsoleUser(t, b)
	u.login(keyViewer)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	// One connection, set up before the pause (a new one's handshake
	// would wait too).
	conn := rdb.Conn()
	defer conn.Close()
	if err := conn.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Every script waits (past --redis-timeout) until
	// CLIENT UNPAUSE.
	if err := conn.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	next := p
	next.Authz.Callers = map[string]policy.ToolAccess{"limited": {Allow: []string{"create_note"}, Mode: policy.ModeShadow}}
	if err := a.Gateway.ReloadPolicy(next); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if !u.on(b).loggedIn() {
		t.Fatal("the session ended before A could mark its policy retired (the test means the mark to fail first)")
	}
	// A's next console request lands the mark first.
	if resp, body := newConsoleUser(t, a).do(http.MethodGet, "/console/login", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("A's login page = %d:\n%.1000s", resp.StatusCode, body)
	}
	if u.on(b).loggedIn() {
		t.Error("the session made under the policy A left still admits on B once Redis answered again")
	}
}
