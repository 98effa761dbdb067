package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/server"
)

// TestCheckConfigWarnsWithoutVerifyCaller: check-config warns when
// user_consent does not check the browser's person, and not when it does.
func TestCheckConfigWarnsWithoutVerifyCaller(t *testing.T) {
	t.Parallel()
	const consent = `auth: {mode: "off"}
upstream_identity:
  user_consent:
    redirect_url: https://gw.example/oauth/upstream/callback
    key_files: [/nonexistent/key]
    store: {bolt_file: /nonexistent/t.db}
    clients: [{name: gh, auth_url: https://a.example/a, token_url: https://a.example/t, client_id: c, client_secret_file: /nonexistent/s}]
`
	for _, tc := range []struct {
		name, extra string
		warn        bool
		reason      string
	}{
		{"without", "", true, "anyone holding a link binds their upstream account to its subject"},
		{"with", "    verify_caller: {issuer: https://idp.example, client_id: gw, client_secret_file: /nonexistent/v}\n", false, "the person is checked"},
	} {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writeFile(t, path, consent+tc.extra)
		warnings, _ := server.CheckConfigWarnings(context.Background(), path, "", false) // the files are missing: errors beside
		got := strings.Contains(strings.Join(warnings, "\n"), "has no verify_caller")
		if got != tc.warn {
			t.Errorf("%s: warnings %q; want the verify_caller warning %v (%s)", tc.name, warnings, tc.warn, tc.reason)
		}
	}
}
