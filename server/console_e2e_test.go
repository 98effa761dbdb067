package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

const (
	keyViewer = "fd_e2e_viewer_0d93be11"
	// keyOperator holds admin and invoker: the console's Invoke calls
	// tools as it could over gRPC.
	keyOperator = "fd_e2e_operator_6c1e90aa"
	// keyViewerInvoker holds viewer and invoker: the policy lets this
	// viewer call tools, so the console lets it Invoke.
	keyViewerInvoker = "fd_e2e_viewinv_41d7c2f0"
	pendingTool      = "weather.forecast"
	pendingURL       = "http://127.0.0.1:9/mcp"
	pendingSecretQ   = "s3cr3t-q"
)

// consolePolicy is testPolicy with a viewer key and an audit file.
func consolePolicy(t *testing.T) (server.PolicyConfig, string) {
	p := testPolicy(nil)
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "viewer", SHA256: policy.HashAPIKey(keyViewer), Roles: []string{policy.RoleViewer}},
		policy.APIKey{Name: "operator", SHA256: policy.HashAPIKey(keyOperator), Roles: []string{policy.RoleAdmin, policy.RoleInvoker}},
		policy.APIKey{Name: "viewer-invoker", SHA256: policy.HashAPIKey(keyViewerInvoker), Roles: []string{policy.RoleViewer, policy.RoleInvoker}})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit.Path = audit
	// Only the start's connection attempt tells the follower of
	// pendingFixture's unreachable upstream: what the overview shows of it
	// does not depend on how long a test runs.
	p.MCPUpstreams.RelistInterval = time.Hour
	return p, audit
}

// pendingFixture is an imported MCP tool with an upstream change held:
// the upstream made its optional city required and bounded (incompatible).
func pendingFixture(string) registry.Tool {
	schema := func(required bool) *structpb.Struct {
		city := map[string]any{"type": "string"}
		s := map[string]any{"type": "object", "properties": map[string]any{"city": city}}
		if required {
			city["maxLength"] = 40
			s["required"] = []any{"city"}
		}
		v, _ := structpb.NewStruct(s)
		return v
	}
	url := pendingURL + "?token=" + pendingSecretQ
	next := registry.Definition{Description: "Forecast for a named city.", InputSchema: schema(true)}
	return registry.Tool{Name: pendingTool, Description: "Forecast for a city.", InputSchema: schema(false),
		Spec:    &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "forecast"}},
		Origin:  &registry.Origin{MCPUpstream: url},
		Pending: &registry.PendingChange{Definition: next, Digest: next.Digest(), DetectedAt: time.Now()}}
}

// consoleEnv is a gateway with the admin listener, the console's users'
// keys, an audit file and a held upstream change.
func consoleEnv(t *testing.T, opts ...gatewaytest.Option) (*gatewaytest.Env, string) {
	t.Helper()
	p, audit := consolePolicy(t)
	env := gatewaytest.Start(t, append([]gatewaytest.Option{gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithTool(pendingFixture)}, opts...)...)
	if e, ok := env.Registry.Lookup(pendingTool); !ok || e.Tool.Pending == nil {
		t.Fatalf("the fixture %s has no pending change", pendingTool)
	}
	return env, audit
}

// consoleUser is a browser-like client of the console: a cookie jar, no
// redirect following (the tests read each answer).
type consoleUser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newConsoleUser(t *testing.T, env *gatewaytest.Env) *consoleUser {
	jar, _ := cookiejar.New(nil)
	return &consoleUser{t: t, base: env.AdminURL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// do sends a request as a same-origin browser form would (Origin and
// Sec-Fetch-Site of the console's own origin) unless h overrides them.
func (u *consoleUser) do(method, path string, form url.Values, h map[string]string) (*http.Response, string) {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.base+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", u.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindStringSubmatch(string(b)); m != nil {
		u.csrf = m[1]
	}
	return resp, string(b)
}

func (u *consoleUser) get(path string) (int, string) {
	u.t.Helper()
	resp, b := u.do(http.MethodGet, path, nil, nil)
	return resp.StatusCode, b
}

func (u *consoleUser) post(path string, form url.Values) (int, string) {
	u.t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", u.csrf)
	}
	resp, b := u.do(http.MethodPost, path, form, nil)
	return resp.StatusCode, b
}

// login logs in with key and loads the overview (so the user holds the
// session's CSRF token).
func (u *consoleUser) login(key string) {
	u.t.Helper()
	resp, b := u.do(http.MethodPost, "/console/login", url.Values{"credential": {key}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		u.t.Fatalf("login = %d %q, want 303 to /console/:\n%.1500s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	if st, b := u.get("/console/"); st != http.StatusOK {
		u.t.Fatalf("overview after login = %d:\n%.1500s", st, b)
	}
}

// TestConsoleLogin: only a credential the policy accepts that holds the
// admin or viewer role gets a session; the cookie is HttpOnly,
// SameSite=Strict and scoped to the console; a refusal never echoes the
// credential.
func TestConsoleLogin(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	for _, c := range []struct {
		name, key, reason string
		status            int
		says              string
	}{
		{"none", "", "no credential at all", http.StatusUnauthorized, "no credentials"},
		{"unknown", "fd_not_a_key_93jd", "a key the policy does not hold", http.StatusUnauthorized, "API key not recognised"},
		{"invoker", keyInvoker, "an invoker may call tools, not see the console", http.StatusForbidden, "neither the admin nor the viewer role"},
		{"viewer", keyViewer, "the read-only role", http.StatusSeeOther, ""},
		{"admin", keyAdmin, "the admin role", http.StatusSeeOther, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newConsoleUser(t, env)
			resp, body := u.do(http.MethodPost, "/console/login", url.Values{"credential": {c.key}}, nil)
			if resp.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("login = %d, want %d saying %q (%s):\n%.1500s", resp.StatusCode, c.status, c.says, c.reason, body)
			}
			if c.key != "" && strings.Contains(body, c.key) {
				t.Errorf("the answer echoes the credential")
			}
			var ses *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == "flowdrop_console" {
					ses = ck
				}
			}
			if c.status != http.StatusSeeOther {
				if ses != nil && ses.Value != "" {
					t.Errorf("a refused login got a session cookie")
				}
				return
			}
			if ses == nil || !ses.HttpOnly || ses.SameSite != http.SameSiteStrictMode || ses.Path != "/console/" || ses.Value == c.key {
				t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/console/ and not the credential", ses)
			}
			if st, page := u.get("/console/"); st != http.StatusOK || !strings.Contains(page, `id="who"`) {
				t.Errorf("overview with the session = %d:\n%.1500s", st, page)
			}
		})
	}
}

// TestConsoleNeedsASession: without a session every page sends the
// browser to the login page and every POST is refused, changing nothing.
func TestConsoleNeedsASession(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	u := newConsoleUser(t, env)
	for _, path := range []string{"/console/", "/console/tools", "/console/tools/create_note", "/console/pending", "/console/audit"} {
		resp, _ := u.do(http.MethodGet, path, nil, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Errorf("GET %s = %d %q, want 303 to /console/login", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if st, _ := u.post("/console/pending/"+pendingTool+"/approve", url.Values{"revision": {"1"}, "csrf": {"x"}}); st != http.StatusUnauthorized {
		t.Errorf("approve without a session = %d, want 401", st)
	}
	if e, _ := env.Registry.Lookup(pendingTool); e.Tool.Pending == nil {
		t.Error("the change was applied without a session")
	}
}

// TestConsoleRefusesForgedPosts: a POST carrying a session cookie but not
// its CSRF token, or sent from another origin, is refused and changes
// nothing; so is a viewer's approval.
func TestConsoleRefusesForgedPosts(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	admin := newConsoleUser(t, env)
	admin.login(keyAdmin)
	viewer := newConsoleUser(t, env)
	viewer.login(keyViewer)
	rev := func() string {
		e, _ := env.Registry.Lookup(pendingTool)
		return strconv.FormatInt(e.Tool.Revision, 10)
	}
	for _, c := range []struct {
		name, reason string
		u            *consoleUser
		csrf         string
		headers      map[string]string
		status       int
	}{
		{"no-token", "a form without the session's token (a forged form on another site)", admin, "", nil, http.StatusForbidden},
		{"wrong-token", "another token", admin, "not-the-token", nil, http.StatusForbidden},
		{"cross-site", "the browser says the request comes from another site", admin, "<session>",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"}, http.StatusForbidden},
		{"other-origin", "an Origin that is not the console's (no Sec-Fetch-Site)", admin, "<session>",
			map[string]string{"Sec-Fetch-Site": "", "Origin": "https://attacker.example"}, http.StatusForbidden},
		{"viewer", "the viewer role is read-only", viewer, "<session>", nil, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			token := c.csrf
			if token == "<session>" {
				token = c.u.csrf
			}
			form := url.Values{"revision": {rev()}, "csrf": {token}}
			resp, body := c.u.do(http.MethodPost, "/console/pending/"+pendingTool+"/approve", form, c.headers)
			if resp.StatusCode != c.status {
				t.Errorf("approve = %d, want %d (%s):\n%.1000s", resp.StatusCode, c.status, c.reason, body)
			}
			if e, _ := env.Registry.Lookup(pendingTool); e.Tool.Pending == nil {
				t.Fatalf("the change was applied (%s)", c.reason)
			}
		})
	}
}

// TestConsoleHeaders: every console answer forbids scripts, framing and
// foreign resources, caching and MIME sniffing.
func TestConsoleHeaders(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	for _, path := range []string{"/console/login", "/console/", "/console/tools", "/console/audit", "/console/tools/nope"} {
		resp, _ := u.do(http.MethodGet, path, nil, nil)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q allows a script", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, h)
		}
	}
}

// awaitAudit waits for the audit file to hold a line containing want
// (the sink writes in batches).
func awaitAudit(t *testing.T, path, want string) string {
	t.Helper()
	var b []byte
	err := poll(5*time.Second, func() error {
		b, _ = os.ReadFile(path)
		if !strings.Contains(string(b), want) {
			return io.EOF
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the audit log has no line with %q:\n%s", want, b)
	}
	return string(b)
}

// TestConsoleApproveAndReject: an admin's approval serves the upstream's
// definition at the next revision, a rejection keeps the served one;
// each is on the audit log under the admin's name, like a gRPC
// approval; a decision at a revision the change has moved past is
// refused.
func TestConsoleApproveAndReject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, reason string
		approve      bool
		wantDesc     string
	}{
		{"approve", "the upstream's definition is served", true, "Forecast for a named city."},
		{"reject", "the served definition stays, the change is dropped", false, "Forecast for a city."},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, audit := consoleEnv(t)
			u := newConsoleUser(t, env)
			u.login(keyAdmin)
			st, page := u.get("/console/pending")
			if st != http.StatusOK || !strings.Contains(page, "incompatible-schema") || !strings.Contains(page, "newly-required") {
				t.Fatalf("pending page = %d, want the change with its compatibility notes:\n%.3000s", st, page)
			}
			before, _ := env.Registry.Lookup(pendingTool)
			rev := strconv.FormatInt(before.Tool.Revision, 10)
			if st, page := u.post("/console/pending/"+pendingTool+"/"+c.name, url.Values{"revision": {strconv.FormatInt(before.Tool.Revision+7, 10)}}); st != http.StatusConflict || !strings.Contains(page, "expected revision") {
				t.Errorf("%s at a revision that is not the tool's = %d, want 409 naming the revisions:\n%.1500s", c.name, st, page)
			}
			resp, page := u.do(http.MethodPost, "/console/pending/"+pendingTool+"/"+c.name, url.Values{"revision": {rev}, "csrf": {u.csrf}}, nil)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("%s = %d, want 303:\n%.1500s", c.name, resp.StatusCode, page)
			}
			after, _ := env.Registry.Lookup(pendingTool)
			if after.Tool.Pending != nil || after.Tool.Description != c.wantDesc || after.Tool.Revision <= before.Tool.Revision {
				t.Errorf("after %s: pending %v, description %q, revision %d (was %d); want none, %q, a new revision (%s)",
					c.name, after.Tool.Pending, after.Tool.Description, after.Tool.Revision, before.Tool.Revision, c.wantDesc, c.reason)
			}
			op := map[bool]string{true: "ApprovePendingChange", false: "RejectPendingChange"}[c.approve]
			log := awaitAudit(t, audit, `"operation":"`+op+`","revision":`+strconv.FormatInt(after.Tool.Revision, 10))
			if !strings.Contains(log, `"caller_subject":"admin","caller_method":"api-key","tool":"`+pendingTool+`","decision":"allow"`) {
				t.Errorf("the audit line does not name the admin and the decision:\n%s", log)
			}
			if !strings.Contains(log, `"decision":"error","reason":"revision-mismatch",`) || !strings.Contains(log, `"operation":"`+op+`"}`) {
				t.Errorf("the refused decision is not on the audit log:\n%s", log)
			}
		})
	}
}

// TestConsoleViewerSeesNoAddress: the viewer sees the catalog, the tool
// and the pending change but no backend or store address and no approve
// button; the admin sees the targets (an MCP URL without its query); no
// page shows a credential.
func TestConsoleViewerSeesNoAddress(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	pages := []string{"/console/", "/console/tools", "/console/tools/" + pendingTool, "/console/tools/create_note", "/console/pending"}
	for _, c := range []struct {
		key, reason  string
		addresses    bool
		approveShown bool
	}{
		{keyViewer, "read-only, and no address", false, false},
		{keyAdmin, "the operator sees targets", true, true},
	} {
		u := newConsoleUser(t, env)
		u.login(c.key)
		var all strings.Builder
		for _, p := range pages {
			st, page := u.get(p)
			if st != http.StatusOK {
				t.Fatalf("GET %s = %d", p, st)
			}
			all.WriteString(page)
		}
		text := all.String()
		// Each address alone: a viewer shown either one is a leak.
		for _, addr := range []string{pendingURL, env.BackendAddr} {
			if got := strings.Contains(text, addr); got != c.addresses {
				t.Errorf("%s: backend address %s shown = %t, want %t (%s)", c.key, addr, got, c.addresses, c.reason)
			}
		}
		if got := strings.Contains(text, ">Approve "+pendingTool); got != c.approveShown {
			t.Errorf("%s: approve button shown = %t, want %t", c.key, got, c.approveShown)
		}
		for _, never := range []string{pendingSecretQ, keyAdmin, keyViewer, keyInvoker} {
			if strings.Contains(text, never) {
				t.Errorf("%s: a page shows %q", c.key, never)
			}
		}
		// The notice after a decision names a tool, never a link's text.
		if _, page := u.get("/console/pending?approved=" + url.QueryEscape("x; log in again at evil.example")); strings.Contains(page, "evil.example") {
			t.Errorf("%s: the pending page echoes a query's text", c.key)
		}
	}
}

// TestConsoleCatalogSearch: the catalog filters by a substring of the
// name or description, case-insensitively.
func TestConsoleCatalogSearch(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	for _, c := range []struct {
		q, reason string
		want      []string
		not       []string
	}{
		{"", "no filter: every tool", []string{"create_note", "apply_ops", pendingTool}, nil},
		{"NOTE", "a name, in another case", []string{"create_note"}, []string{"apply_ops", pendingTool}},
		{"json-patch", "a description's words", []string{"apply_ops"}, []string{"create_note"}},
		{"<script>", "matches nothing, and is shown escaped", nil, []string{"create_note", "<script>"}},
	} {
		st, page := u.get("/console/tools?q=" + url.QueryEscape(c.q))
		if st != http.StatusOK {
			t.Fatalf("q=%q: %d", c.q, st)
		}
		for _, w := range c.want {
			if !strings.Contains(page, `<a href="/console/tools/`+w+`">`) {
				t.Errorf("q=%q lacks %s (%s)", c.q, w, c.reason)
			}
		}
		for _, n := range c.not {
			if strings.Contains(page, `<a href="/console/tools/`+n+`">`) || (n == "<script>" && strings.Contains(page, n)) {
				t.Errorf("q=%q shows %s (%s)", c.q, n, c.reason)
			}
		}
	}
}

// TestConsoleTryIt: pasted arguments are normalized and validated as a
// call's would be under the policy in force, and nothing reaches the
// backend or the audit log.
func TestConsoleTryIt(t *testing.T) {
	t.Parallel()
	env, audit := consoleEnv(t)
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	if st, _ := u.get("/console/tools/create_note"); st != http.StatusOK {
		t.Fatal(st)
	}
	for _, c := range []struct {
		name, args, reason string
		want               []string
	}{
		{"repaired", `{"title":"Tom &amp;amp; Jerry","tags":"[\"cartoon\",\"classic\"]"}`, "a stringified array and a twice-escaped title are repaired",
			[]string{"valid: the backend would receive", "<code>/tags</code></td><td>json-decoded", "<code>/title</code></td><td>entities-decoded (2 passes)",
				`&#34;title&#34;: &#34;Tom &amp; Jerry&#34;`}},
		{"invalid", `{"title":""}`, "a schema violation is shown with its pointer", []string{"refused:", "<code>/title</code>", "at least 1 characters"}},
		{"malformed", `{"title":"a","title":"b"}`, "the strict parser's refusal", []string{"refused:", "appears more than once"}},
		{"over-limit", `{"title":"` + strings.Repeat("x", 300) + `"}`, "the policy's max_string_length (256)", []string{"refused:", "max_string_length"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, page := u.post("/console/tools/create_note/try", url.Values{"arguments": {c.args}})
			if st != http.StatusOK {
				t.Fatalf("try = %d:\n%.2000s", st, page)
			}
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					t.Errorf("the answer lacks %q (%s):\n%.4000s", w, c.reason, page)
				}
			}
		})
	}
	if n := len(env.Backend.Calls()); n != 0 {
		t.Errorf("the backend got %d calls from try-it", n)
	}
	if b, _ := os.ReadFile(audit); strings.Contains(string(b), `"tool":"create_note"`) {
		t.Errorf("try-it wrote an audit line:\n%s", b)
	}
}

// TestConsoleAuditTail: the audit page lists the calls newest first,
// filtered by tool, caller, decision and reason, and never shows an
// argument.
func TestConsoleAuditTail(t *testing.T) {
	t.Parallel()
	env, audit := consoleEnv(t)
	for _, c := range []struct {
		key, tool string
		args      map[string]any
	}{
		{keyInvoker, "create_note", map[string]any{"title": "A &amp; B", "body": "secret-body-text"}},
		{keyInvoker, "run_command", map[string]any{"command": "ls && rm -rf /"}},
		{keyLimited, "run_command", map[string]any{"command": "ls"}},
	} {
		env.Client.InvokeTool(withKey(c.key), &gatewayv1.InvokeToolRequest{Tool: c.tool, Arguments: gatewaytest.Args(t, c.args)})
	}
	awaitAudit(t, audit, `"caller_subject":"limited"`)
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	rows := regexp.MustCompile(`<tr><td>[0-9-]+ [0-9:]+Z</td><td>([^<]*)</td><td>([^<]*)</td><td class="[a-z]+">([a-z]+)</td><td>([^<]*)`)
	for _, c := range []struct {
		query, reason string
		want          []string // caller tool decision reason, newest first
	}{
		{"", "every line, newest first", []string{"limited run_command deny tool-denied", "invoker run_command deny rule-denied", "invoker create_note allow "}},
		{"tool=run_command", "by tool", []string{"limited run_command deny tool-denied", "invoker run_command deny rule-denied"}},
		{"caller=invoker", "by caller", []string{"invoker run_command deny rule-denied", "invoker create_note allow "}},
		{"decision=allow", "by decision", []string{"invoker create_note allow "}},
		{"reason=rule-denied", "by reason", []string{"invoker run_command deny rule-denied"}},
		{"tool=nope", "nothing matches", nil},
	} {
		st, page := u.get("/console/audit?" + c.query)
		if st != http.StatusOK {
			t.Fatalf("%s: %d", c.query, st)
		}
		var got []string
		for _, m := range rows.FindAllStringSubmatch(page, -1) {
			got = append(got, strings.Join(m[1:], " "))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("audit?%s rows:\n%s\nwant (%s):\n%s", c.query, strings.Join(got, "\n"), c.reason, strings.Join(c.want, "\n"))
		}
		for _, never := range []string{"secret-body-text", "rm -rf", keyInvoker} {
			if strings.Contains(page, never) {
				t.Errorf("audit?%s shows %q", c.query, never)
			}
		}
	}
}

// TestConsolePolicyInForce: a policy reload ends the sessions made under
// the policy before (their roles may have changed); logged in again, the
// overview names the new policy's hash, the reload, and what its
// shadow-mode entry would have refused.
func TestConsolePolicyInForce(t *testing.T) {
	t.Parallel()
	env, audit := consoleEnv(t)
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	before := env.Gateway.PolicySHA256()

	next, _ := consolePolicy(t)
	next.Audit.Path = audit // set at start: a reload cannot change it
	next.Authz.Callers = map[string]policy.ToolAccess{"limited": {Allow: []string{"create_note"}, Mode: policy.ModeShadow}}
	if err := env.Gateway.ReloadPolicy(next); err != nil {
		t.Fatalf("reload: %v", err)
	}
	after := env.Gateway.PolicySHA256()
	if resp, _ := u.do(http.MethodGet, "/console/", nil, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
		t.Fatalf("after a reload the old session got %d %q, want 303 to the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	env.Client.InvokeTool(withKey(keyLimited), &gatewayv1.InvokeToolRequest{Tool: "apply_ops", Arguments: gatewaytest.Args(t, map[string]any{"ops": []any{}})})
	u.login(keyViewer)
	_, page := u.get("/console/")
	for _, want := range []string{
		"<code>" + after + "</code>",
		`<span class="ok">swapped in</span></td><td><code>` + after[:12] + `</code> <small>(was <code>` + before[:12] + `</code>)`,
		"<tr><td>apply_ops</td><td>tool-not-allowed</td><td class=\"num\">1</td></tr>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q:\n%.6000s", want, page)
		}
	}
}

// TestConsoleRepairAnalytics: calls repaired over gRPC show on the repair
// analytics page, to viewers, as counts per field, caller and event with
// the schema change the pattern suggests; the page is linked from the nav
// and from the tool's page, filters by tool, and shows no argument value.
func TestConsoleRepairAnalytics(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	const repaired = 20 // repairstats.DefaultThresholds.MinCalls
	for i := range repaired {
		args := map[string]any{"title": "secret-title-" + strconv.Itoa(i), "tags": `["secret-tag"]`}
		if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, args)}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": ""})}); err == nil {
		t.Fatal("an empty title was accepted")
	}
	u := newConsoleUser(t, env)
	u.login(keyViewer)
	_, overview := u.get("/console/")
	if !strings.Contains(overview, `<a href="/console/repairs">Repair analytics</a>`) {
		t.Errorf("the nav has no link to the repair analytics:\n%.3000s", overview)
	}
	_, toolPage := u.get("/console/tools/create_note")
	if !strings.Contains(toolPage, `href="/console/repairs?tool=create_note"`) {
		t.Errorf("the tool's page has no link to its repair analytics:\n%.3000s", toolPage)
	}
	row := func(field, event string, calls int) string {
		return `<tr><td><code>` + field + `</code></td><td>` + event + `</td><td>invoker</td><td>grpc-go</td><td class="num">` + strconv.Itoa(calls) + `</td></tr>`
	}
	for _, c := range []struct {
		query, reason string
		status        int
		want, not     []string
	}{
		{"", "every tool's analytics", http.StatusOK,
			[]string{`<h2 id="r-create_note">`, "21 call(s) normalized, 1 failed validation", row("/tags", "repair: json-decoded", repaired), row("/title", "invalid: minLength", 1),
				"<strong>document-shape</strong> <code>/tags</code>: `/tags` arrived as a JSON-encoded string in 95% of calls (20 of 21)"},
			[]string{`id="r-` + pendingTool + `"`}},
		{"?tool=create_note", "one tool's", http.StatusOK,
			[]string{`<h2 id="r-create_note">`, row("/tags", "repair: json-decoded", repaired), "document-shape"}, nil},
		{"?tool=" + pendingTool, "a registered tool not called yet", http.StatusOK,
			[]string{"No call of " + pendingTool + " has reached normalization"}, []string{`id="r-create_note"`}},
		{"?tool=" + url.QueryEscape("<b>x</b>"), "not a tool name: refused, not echoed", http.StatusBadRequest,
			[]string{"the tool filter is not a tool name"}, []string{"<b>x</b>", "&lt;b&gt;x"}},
	} {
		st, page := u.get("/console/repairs" + c.query)
		if st != c.status {
			t.Fatalf("repairs%s = %d, want %d (%s):\n%.3000s", c.query, st, c.status, c.reason, page)
		}
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("repairs%s lacks %q (%s):\n%.6000s", c.query, w, c.reason, page)
			}
		}
		for _, never := range append(c.not, "secret-title", "secret-tag", keyInvoker) {
			if strings.Contains(page, never) {
				t.Errorf("repairs%s shows %q (%s)", c.query, never, c.reason)
			}
		}
	}
}

// TestConsolePolicyReplay: an admin pastes a candidate policy and tools
// file; the page replays the audit tail against them and lists each
// changed decision with its rule and reason, but never the pasted text,
// an argument, nor a refusal's message (it may quote values). Viewers
// neither see nor may run it; a candidate that does not parse is refused
// naming at most a line.
func TestConsolePolicyReplay(t *testing.T) {
	t.Parallel()
	env, audit := consoleEnv(t)
	for _, c := range []struct {
		id, tool string
		args     map[string]any
	}{
		{"c-long", "create_note", map[string]any{"title": "Weekly plan", "tags": `["secret-tag"]`}},
		{"c-chain", "run_command", map[string]any{"command": "ls && rm -rf /"}},
		{"c-sudo", "run_command", map[string]any{"command": "sudo ls"}},
	} {
		env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: c.tool, CallId: c.id, Arguments: gatewaytest.Args(t, c.args)})
	}
	awaitAudit(t, audit, `"call_id":"c-sudo"`)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "replay", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pol, tools := read("policy.candidate.yaml"), read("tools.candidate.yaml")

	viewer := newConsoleUser(t, env)
	viewer.login(keyViewer)
	if _, page := viewer.get("/console/"); strings.Contains(page, "/console/replay") {
		t.Error("a viewer's nav links to the policy replay")
	}
	if st, _ := viewer.get("/console/replay"); st != http.StatusForbidden {
		t.Errorf("a viewer's GET /console/replay = %d, want 403", st)
	}
	if st, _ := viewer.post("/console/replay", url.Values{"policy": {pol}}); st != http.StatusForbidden {
		t.Errorf("a viewer's replay = %d, want 403", st)
	}

	u := newConsoleUser(t, env)
	u.login(keyAdmin)
	if st, page := u.get("/console/replay"); st != http.StatusOK || !strings.Contains(page, `<form method="post" action="/console/replay"`) {
		t.Fatalf("GET /console/replay = %d:\n%.3000s", st, page)
	}
	row := regexp.MustCompile(`<tr><td class="num">[0-9]+</td><td>[0-9-]+ [0-9:]+Z</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td class="[a-z]+">(.*?)</td><td class="[a-z]+">(.*?)</td></tr>`)
	for _, c := range []struct {
		name, pol, tools, reason string
		status                   int
		rows, want               []string // rows: caller tool change | was | now
	}{
		{"candidate", pol, tools, "a schema now refusing, a rule gone, a new rule", http.StatusOK,
			[]string{"invoker create_note schema-refused | allow | deny <small>validation-failed</small>",
				"invoker run_command refused-to-allowed | deny <small>rule-denied</small> <small>rule no-shell-chaining</small> | allow",
				"invoker run_command allowed-to-refused | allow | deny <small>rule-denied</small> <small>rule no-sudo</small>"},
			[]string{"3 replayed: 0 unchanged"}},
		{"tools served now", pol, "", "without a tools file the tools served now judge the calls: no schema change", http.StatusOK,
			[]string{"invoker run_command refused-to-allowed | deny <small>rule-denied</small> <small>rule no-shell-chaining</small> | allow",
				"invoker run_command allowed-to-refused | allow | deny <small>rule-denied</small> <small>rule no-sudo</small>"},
			[]string{"3 replayed: 1 unchanged"}},
		{"unparsable", "auth:\n  mode: [sk-pasted-secret\n", "", "a YAML error may quote the text: only its line is named", http.StatusUnprocessableEntity,
			nil, []string{"the candidate policy is not valid (at line"}},
		{"oversized", pol + "\n#" + strings.Repeat("x", 600<<10), "", "bounded input", http.StatusRequestEntityTooLarge,
			nil, []string{"a pasted file is over 512 KiB"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, page := u.post("/console/replay", url.Values{"policy": {c.pol}, "tools": {c.tools}})
			if st != c.status {
				t.Fatalf("replay = %d, want %d (%s):\n%.4000s", st, c.status, c.reason, page)
			}
			var got []string
			for _, m := range row.FindAllStringSubmatch(page, -1) {
				got = append(got, strings.Join(m[1:4], " ")+" | "+m[4]+" | "+m[5])
			}
			if strings.Join(got, "\n") != strings.Join(c.rows, "\n") {
				t.Errorf("changes (%s):\n%s\nwant:\n%s\n%.6000s", c.reason, strings.Join(got, "\n"), strings.Join(c.rows, "\n"), page)
			}
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q (%s):\n%.6000s", w, c.reason, page)
				}
			}
			for _, never := range []string{"secret-tag", "Weekly plan", "sk-pasted-secret", "may not use sudo", "at most 8 characters", keyInvoker} {
				if strings.Contains(page, never) {
					t.Errorf("the page shows %q (%s)", never, c.reason)
				}
			}
		})
	}
}
