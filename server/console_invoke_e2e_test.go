package server_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleInvoke: the try-it panel's Invoke is a real call through the
// whole pipeline to the real backend, as the session's principal. It
// reaches the backend only for a principal the policy lets call the tool
// (an admin session's principal or a viewer's with the invoker role);
// the role stage, CEL rules and idempotency apply as on the faces; a
// viewer-only session and a form without the session's CSRF token cause
// no call. Every call is audited under the principal with the client
// "console".
func TestConsoleInvoke(t *testing.T) {
	t.Parallel()
	env, audit := consoleEnv(t)
	users := map[string]*consoleUser{}
	for _, k := range []string{keyOperator, keyAdmin, keyViewer, keyViewerInvoker} {
		u := newConsoleUser(t, env)
		u.login(k)
		users[k] = u
	}
	for _, c := range []struct {
		name, reason string
		key          string
		tool, args   string
		idemKey      string
		noCSRF       bool
		status       int
		says         []string // on the page, HTML unescaped
		backend      int      // calls the backend receives
		auditLine    string   // a line of the audit log holds this (empty: none is looked for)
	}{
		{name: "operator", reason: "admin and invoker: the call reaches the backend, repaired (tags stringified), and its answer is shown",
			key: keyOperator, tool: "create_note", args: `{"title":"from the console","tags":"[\"a\"]"}`, status: http.StatusOK,
			says:    []string{"the tool answered", `"title": "from the console"`, `"subject": "operator"`, "/tags"},
			backend: 1, auditLine: `"caller_subject":"operator","caller_method":"api-key","caller_roles":["admin","invoker"],"client":"console","tool":"create_note"`},
		{name: "viewer-invoker", reason: "the policy lets this viewer call tools (the invoker role), so it may Invoke",
			key: keyViewerInvoker, tool: "create_note", args: `{"title":"viewer call"}`, status: http.StatusOK,
			says: []string{"the tool answered", `"subject": "viewer-invoker"`}, backend: 1, auditLine: `"caller_subject":"viewer-invoker"`},
		{name: "admin-without-invoker", reason: "admin does not imply invoker: the pipeline's role stage refuses, audited; the console grants nothing the principal lacks",
			key: keyAdmin, tool: "create_note", args: `{"title":"x"}`, status: http.StatusOK,
			says: []string{"refused (PermissionDenied"}, auditLine: `"caller_subject":"admin","caller_method":"api-key","caller_roles":["admin"],"client":"console","tool":"create_note","decision":"deny"`},
		{name: "rule", reason: "the CEL rules apply: the backend is not called",
			key: keyOperator, tool: "run_command", args: `{"command":"ls && rm -rf /"}`, status: http.StatusOK,
			says: []string{"refused (PermissionDenied", "rule <code>no-shell-chaining</code>"}, auditLine: `"client":"console","tool":"run_command","decision":"deny","reason":"rule-denied","rule":"no-shell-chaining"`},
		{name: "invalid", reason: "the arguments are validated: a refusal names the pointer",
			key: keyOperator, tool: "create_note", args: `{"title":""}`, status: http.StatusOK,
			says: []string{"refused (InvalidArgument", "/title"}},
		{name: "idempotent-first", reason: "an idempotency key: the first call runs",
			key: keyOperator, tool: "create_note", args: `{"title":"once"}`, idemKey: "console-k1", status: http.StatusOK,
			says: []string{"the tool answered"}, backend: 1, auditLine: `"idempotency_key":"console-k1"`},
		{name: "idempotent-again", reason: "the same key and arguments: the stored answer, the backend is not called again",
			key: keyOperator, tool: "create_note", args: `{"title":"once"}`, idemKey: "console-k1", status: http.StatusOK,
			says: []string{"the tool answered", "replayed"}},
		{name: "viewer", reason: "a viewer-only session causes no call (no button, and the POST is refused)",
			key: keyViewer, tool: "create_note", args: `{"title":"x"}`, status: http.StatusForbidden,
			says: []string{"needs the admin role, or a role the policy grants for InvokeTool"}},
		{name: "no-csrf", reason: "a form without the session's CSRF token causes no call",
			key: keyOperator, tool: "create_note", args: `{"title":"forged"}`, noCSRF: true, status: http.StatusForbidden,
			says: []string{"CSRF token"}},
		{name: "unknown-tool", reason: "no such tool: no call", key: keyOperator, tool: "no_such_tool", args: `{}`, status: http.StatusNotFound,
			says: []string{"no such tool"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := users[c.key]
			before := len(env.Backend.Calls())
			form := url.Values{"arguments": {c.args}, "idempotency_key": {c.idemKey}, "csrf": {u.csrf}}
			if c.noCSRF {
				form.Set("csrf", "")
			}
			resp, body := u.do(http.MethodPost, "/console/tools/"+c.tool+"/invoke", form, nil)
			page := html.UnescapeString(body)
			if resp.StatusCode != c.status {
				t.Fatalf("invoke = %d, want %d (%s):\n%.2000s", resp.StatusCode, c.status, c.reason, page)
			}
			for _, want := range c.says {
				if !strings.Contains(page, want) {
					t.Errorf("the page does not say %q (%s):\n%.3000s", want, c.reason, page)
				}
			}
			if got := len(env.Backend.Calls()) - before; got != c.backend {
				t.Errorf("the backend received %d calls, want %d (%s)", got, c.backend, c.reason)
			}
			if c.auditLine != "" {
				awaitAudit(t, audit, c.auditLine)
			}
			never := []string{keyOperator, keyAdmin, keyViewer, keyViewerInvoker}
			if c.key != keyOperator && c.key != keyAdmin {
				never = append(never, env.BackendAddr) // the tool page shows it to admins only
			}
			for _, never := range never {
				if strings.Contains(page, never) {
					t.Errorf("the page shows %q", never)
				}
			}
		})
	}
	// The viewer's tool page offers no Invoke; the operator's does.
	for k, want := range map[string]bool{keyViewer: false, keyOperator: true, keyViewerInvoker: true} {
		if _, page := users[k].get("/console/tools/create_note"); strings.Contains(page, ">Invoke</button>") != want {
			t.Errorf("the Invoke button shown = %v for the key ending %s, want %v", !want, k[len(k)-4:], want)
		}
	}
}
