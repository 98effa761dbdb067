package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/registry"
)

// TestCompileTransportSecurity: admission reads a tool's TLS files as a
// connection would, and refuses one that would not load naming the field,
// never the path; compilation (every replica, every stored revision) checks
// only the settings, so a file missing on one replica does not make the
// tool vanish there.
func TestCompileTransportSecurity(t *testing.T) {
	dir := t.TempDir()
	ca := testca.New(t)
	cert, key := ca.Issue(t, "gateway", false)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile, certFile, keyFile := write("ca.pem", ca.PEM), write("c.pem", cert), write("k.pem", key)
	junk, missing := write("junk.pem", []byte("not pem")), filepath.Join(dir, "missing.pem")
	cases := []struct {
		name, reason      string
		tls               registry.TransportSecurity
		wantField, wantIn string // "" wantField: admitted
		compiles          bool   // refused by admission only, for its files
	}{
		{name: "ca", reason: "a CA file that parses is admitted", tls: registry.TransportSecurity{CAFile: caFile}},
		{name: "mtls", reason: "a CA with a client certificate and key is admitted", tls: registry.TransportSecurity{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}},
		{name: "require-only", reason: "require alone means TLS with the host's roots", tls: registry.TransportSecurity{Require: true}},
		{name: "empty", reason: "a tls block setting nothing is a mistake, not plaintext", wantField: "spec.tls", wantIn: "sets nothing"},
		{name: "missing-ca", reason: "a CA file the gateway cannot read is refused at admission, not at the first call",
			tls: registry.TransportSecurity{CAFile: missing}, wantField: "spec.tls.ca_file", wantIn: "does not load", compiles: true},
		{name: "junk-ca", reason: "a CA file with no PEM certificate is refused", tls: registry.TransportSecurity{CAFile: junk}, wantField: "spec.tls.ca_file", wantIn: "does not load", compiles: true},
		{name: "cert-without-key", reason: "mTLS needs both halves", tls: registry.TransportSecurity{CertFile: certFile}, wantField: "spec.tls.cert_file", wantIn: "go together"},
		{name: "key-mismatch", reason: "a certificate with a key that is not its own does not load",
			tls: registry.TransportSecurity{CertFile: certFile, KeyFile: caFile}, wantField: "spec.tls.cert_file", wantIn: "does not load", compiles: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tls := tc.tls
			tool := registry.Tool{Name: "notes.create", InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
				Spec: &registry.BackendSpec{TLS: &tls, GRPCMethod: &registry.GRPCMethod{Target: "127.0.0.1:7002",
					Method: "/flowdrop.testing.v1.NotesService/CreateNote", Descriptors: notestest.DescriptorSet()}}}
			_, cerr := registry.Compile(tool)
			if tc.compiles && cerr != nil {
				t.Errorf("Compile: %v, want compiled (files are admission's, not every replica's) (%s)", cerr, tc.reason)
			}
			_, err := registry.Admission{}.Admit(context.Background(), tool, nil)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Compile: %v (%s)", err, tc.reason)
				}
				return
			}
			var te *registry.ToolError
			if !errors.As(err, &te) || te.Field != tc.wantField || !strings.Contains(te.Reason, tc.wantIn) {
				t.Fatalf("Compile: %v, want a ToolError on %s containing %q (%s)", err, tc.wantField, tc.wantIn, tc.reason)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("refusal %q names a path on the gateway's disk (%s)", err, tc.reason)
			}
		})
	}
}

// TestToolsFileAnnotations: the tools file carries MCP's annotation names;
// an unset hint stays unset.
func TestToolsFileAnnotations(t *testing.T) {
	tools, err := registry.ParseTools([]byte(`tools:
  - name: lookup
    backend: 127.0.0.1:7001
    annotations: {idempotent_hint: true, read_only_hint: true}
    input_schema: {type: object}
  - name: plain
    backend: 127.0.0.1:7001
    input_schema: {type: object}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	a := tools[0].Annotations
	if !tools[0].Idempotent() || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint != nil {
		t.Errorf("lookup annotations = %+v, want idempotent and read-only set, destructive unset", a)
	}
	if tools[1].Annotations != nil || tools[1].Idempotent() {
		t.Errorf("plain annotations = %+v, want none (not idempotent)", tools[1].Annotations)
	}
	if _, err := registry.ParseTools([]byte("tools: [{name: x, backend: '127.0.0.1:1', input_schema: {type: object}, annotations: {idempotent: true}}]"), "test"); err == nil || !strings.Contains(err.Error(), "idempotent") {
		t.Errorf("unknown annotation key: err = %v, want it refused naming it", err)
	}
}
