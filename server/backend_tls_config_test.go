package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
)

// TestPolicyBackendTLS: the policy file's backend_tls list is read with its
// snake_case keys, unknown keys refused, and its files loaded when the
// policy is (a bad file fails start-up, never plaintext).
func TestPolicyBackendTLS(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, testca.New(t).PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy([]byte("auth: {mode: off}\nbackend_tls:\n  - {match: '*.tools.internal:7001', ca_file: "+ca+", server_name: tools, require: true}\n"), "inline")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.BackendTLS) != 1 || p.BackendTLS[0].Match != "*.tools.internal:7001" || p.BackendTLS[0].TLS.CAFile != ca ||
		p.BackendTLS[0].TLS.ServerName != "tools" || !p.BackendTLS[0].TLS.Require {
		t.Errorf("backend_tls = %+v", p.BackendTLS)
	}
	cases := []struct {
		name, doc, want, reason string
	}{
		{"unknown-key", "backend_tls: [{match: x, ca: " + ca + "}]", "unknown field", "a misspelt key must not leave a target in plaintext"},
		{"no-match", "backend_tls: [{ca_file: " + ca + "}]", "match is required", "an entry must say which targets it covers"},
		{"bad-glob", "backend_tls: [{match: '[', ca_file: " + ca + "}]", "not a glob", "a glob that cannot match is a mistake"},
		{"nothing-set", "backend_tls: [{match: x}]", "sets nothing", "an entry setting nothing would be plaintext"},
		{"missing-file", "backend_tls: [{match: x, ca_file: " + filepath.Join(dir, "nope.pem") + "}]", "ca_file", "a file that does not load fails start-up"},
		{"half-mtls", "backend_tls: [{match: x, cert_file: " + ca + "}]", "go together", "mTLS needs both files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte("auth: {mode: off}\n"+tc.doc+"\n"), "p.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParsePolicy: %v, want an error containing %q (%s)", err, tc.want, tc.reason)
			}
		})
	}
}

// TestReloadRefusesBackendTLSChange: backend connections are set up at
// start, so a reload changing backend_tls is refused, naming it, rather
// than leaving the operator believing new TLS settings are in force.
func TestReloadRefusesBackendTLSChange(t *testing.T) {
	cur := DemoPolicy()
	next := DemoPolicy()
	next.BackendTLS = []backend.TargetTLS{{Match: "*", TLS: registry.TransportSecurity{Require: true}}}
	if err := unswappable(&cur, &next); err == nil || !strings.Contains(err.Error(), "backend_tls") {
		t.Errorf("unswappable: %v, want backend_tls refused", err)
	}
	same := DemoPolicy()
	if err := unswappable(&cur, &same); err != nil {
		t.Errorf("unswappable with no change: %v", err)
	}
}
