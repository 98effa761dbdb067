package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// TestMTLSIdentity: a verified client certificate identifies the caller
// through the gateway's own TLS listener; without one, an API key still
// works, and with neither the call is Unauthenticated.
func TestMTLSIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := testca.New(t)
	srvCert, srvKey := ca.Issue(t, "gateway", true)
	cliCert, cliKey := ca.Issue(t, "svc-agent", false)

	p := testPolicy(nil)
	p.Auth.MTLS = &policy.MTLSConfig{SubjectFrom: "cn", Roles: map[string][]string{"svc-agent": {policy.RoleInvoker}}}
	p.TLS = server.TLSConfig{CertFile: write("srv.pem", srvCert), KeyFile: write("srv.key", srvKey), ClientCAFile: write("ca.pem", ca.PEM)}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	dial := func(withCert bool) gatewayv1.ToolGatewayServiceClient {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if withCert {
			pair, err := tls.X509KeyPair(cliCert, cliKey)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		cc, err := grpc.NewClient(env.Addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return gatewayv1.NewToolGatewayServiceClient(cc)
	}
	req := func() *gatewayv1.InvokeToolRequest {
		return &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}
	}
	cases := []struct {
		name, reason string
		cert         bool
		ctx          context.Context
		code         codes.Code
		subject      string
	}{
		{name: "client-cert", reason: "the verified certificate's CN is the caller", cert: true, ctx: context.Background(), code: codes.OK, subject: "svc-agent"},
		{name: "api-key-over-tls", reason: "a client without a certificate may use a key", ctx: withKey(keyInvoker), code: codes.OK, subject: "invoker"},
		{name: "nothing", reason: "TLS alone is no identity", ctx: context.Background(), code: codes.Unauthenticated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			_, err := dial(tc.cert).InvokeTool(tc.ctx, req())
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v (%s)", status.Code(err), err, tc.code, tc.reason)
			}
			if tc.code != codes.OK {
				return
			}
			calls := env.Backend.CallsFor("create_note")
			if len(calls) != before+1 || calls[before].Request.GetCaller().GetSubject() != tc.subject {
				t.Errorf("backend saw caller %v, want %s (%s)", calls[len(calls)-1].Request.GetCaller(), tc.subject, tc.reason)
			}
		})
	}
}
