package main

// Credentials and TLS end to end: flowdropctl against a real gateway with
// authentication on (internal/gatewaytest), on 127.0.0.1.

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/server"
	"github.com/golang-jwt/jwt/v5"
)

const (
	keyInvoker = "fd_ctl_invoker_5be07d21"
	keyAdmin   = "fd_ctl_admin_0c9a44f6"
	keyWrong   = "fd_ctl_wrong_e3117a90"
	jwtIssuer  = "https://issuer.flowdrop.test"
	jwtAud     = "flowdrop-gateway"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mintJWT signs an RS256 token for the invoker role with a key generated
// here, and returns it with the path of a JWKS file holding the public half.
func mintJWT(t *testing.T, dir string) (token, jwksPath string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "kid": "ctl", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": jwtIssuer, "aud": jwtAud, "sub": "agent-jwt", "roles": []string{policy.RoleInvoker},
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Add(-time.Minute).Unix(),
	})
	tok.Header["kid"] = "ctl"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return signed, writeFile(t, dir, "jwks.json", string(jwks))
}

// authPolicy turns authentication on: an invoker key, an admin key and,
// when jwksPath is set, JWTs from jwtIssuer.
func authPolicy(jwksPath string) server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "invoker", SHA256: policy.HashAPIKey(keyInvoker), Roles: []string{policy.RoleInvoker}},
		{Name: "admin", SHA256: policy.HashAPIKey(keyAdmin), Roles: []string{policy.RoleAdmin}},
	}}
	if jwksPath != "" {
		p.Auth.JWT = &policy.JWTConfig{Issuer: jwtIssuer, Audience: jwtAud, JWKSFile: jwksPath}
	}
	return p
}

// ctlCase is one flowdropctl run: its environment, arguments and what it
// must (and must not) print.
type ctlCase struct {
	name, reason string
	env          map[string]string // FLOWDROP_API_KEY / FLOWDROP_TOKEN (unset ones are cleared)
	args         []string
	wantCode     int
	wantStdout   []string
	wantStderr   []string
	subject      string   // the caller the backend must see (invoke only)
	secrets      []string // must appear in neither stdout nor stderr
}

func runCtl(t *testing.T, tc ctlCase) (stdout, stderr string) {
	t.Helper()
	for _, k := range []string{envAPIKey, envToken} {
		t.Setenv(k, tc.env[k])
	}
	var out, errb bytes.Buffer
	code := run(tc.args, strings.NewReader(""), &out, &errb)
	if code != tc.wantCode {
		t.Fatalf("exit code %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.wantCode, tc.reason, &out, &errb)
	}
	inOrder(t, "stdout", out.String(), tc.wantStdout, tc.reason)
	inOrder(t, "stderr", errb.String(), tc.wantStderr, tc.reason)
	for _, s := range tc.secrets {
		if strings.Contains(out.String(), s) || strings.Contains(errb.String(), s) {
			t.Errorf("a secret was printed (%s):\nstdout: %s\nstderr: %s", tc.reason, &out, &errb)
		}
	}
	return out.String(), errb.String()
}

func TestInvokeCredentials(t *testing.T) {
	dir := t.TempDir()
	tok, jwks := mintJWT(t, dir)
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(authPolicy(jwks)))
	keyFile := writeFile(t, dir, "key", keyInvoker+"\n")
	wrongFile := writeFile(t, dir, "wrong", keyWrong+"\n")
	tokFile := writeFile(t, dir, "token", "  "+tok+"\n\n")
	emptyFile := writeFile(t, dir, "empty", " \n")
	twoLines := writeFile(t, dir, "twolines", keyInvoker+"\n"+keyAdmin+"\n")

	invoke := func(extra ...string) []string {
		return append([]string{"invoke", "create_note", "--addr", env.Addr, "--timeout", "10s", "--args", `{"title":"t"}`}, extra...)
	}
	all := []string{keyInvoker, keyAdmin, keyWrong, tok}
	cases := []ctlCase{
		{name: "none", reason: "without credentials the gateway refuses: exit 1 printing Unauthenticated",
			args: invoke(), wantCode: 1, wantStderr: []string{"error: Unauthenticated: "}},
		{name: "env-api-key", reason: "$FLOWDROP_API_KEY is sent as x-api-key",
			env: map[string]string{envAPIKey: keyInvoker}, args: invoke(), wantStdout: []string{`"title": "t"`}, subject: "invoker", secrets: all},
		{name: "api-key-file", reason: "--api-key-file sends the file's key, trimmed",
			args: invoke("--api-key-file", keyFile), wantStdout: []string{`"title": "t"`}, subject: "invoker", secrets: all},
		{name: "token-file-jwt", reason: "--token-file sends a JWT as authorization: Bearer",
			args: invoke("--token-file", tokFile), wantStdout: []string{`"title": "t"`}, subject: "agent-jwt", secrets: all},
		{name: "env-token-jwt", reason: "$FLOWDROP_TOKEN is sent as authorization: Bearer",
			env: map[string]string{envToken: tok}, args: invoke(), wantStdout: []string{`"title": "t"`}, subject: "agent-jwt", secrets: all},
		{name: "file-beats-env", reason: "a file flag wins over the variable of the same kind",
			env: map[string]string{envAPIKey: keyWrong}, args: invoke("--api-key-file", keyFile), subject: "invoker", secrets: all},
		{name: "wrong-key-env", reason: "a refused key is Unauthenticated and never printed",
			env: map[string]string{envAPIKey: keyWrong}, args: invoke(), wantCode: 1, wantStderr: []string{"error: Unauthenticated: API key not recognised"}, secrets: all},
		{name: "wrong-key-file", reason: "the same from a file",
			args: invoke("--api-key-file", wrongFile), wantCode: 1, wantStderr: []string{"error: Unauthenticated: "}, secrets: all},
		{name: "both", reason: "an API key and a token together are refused before calling, naming the sources only",
			env: map[string]string{envAPIKey: keyInvoker}, args: invoke("--token-file", tokFile), wantCode: 2,
			wantStderr: []string{"both an API key ($FLOWDROP_API_KEY) and a bearer token (--token-file " + tokFile + ")"}, secrets: all},
		{name: "empty-file", reason: "an empty key file is bad input naming the file",
			args: invoke("--api-key-file", emptyFile), wantCode: 2, wantStderr: []string{"--api-key-file " + emptyFile + ": file holds no API key"}},
		{name: "missing-file", reason: "a key file that does not exist is bad input",
			args: invoke("--token-file", filepath.Join(dir, "nope")), wantCode: 2, wantStderr: []string{"--token-file: open "}},
		{name: "two-lines", reason: "a file with more than the key is refused without echoing it",
			args: invoke("--api-key-file", twoLines), wantCode: 2, wantStderr: []string{"spans several lines"}, secrets: all},
		{name: "cert-without-key", reason: "--cert-file needs --key-file",
			args: invoke("--cert-file", keyFile), wantCode: 2, wantStderr: []string{"--cert-file and --key-file go together"}},
		{name: "no-secret-arguments", reason: "there is no flag taking a secret itself",
			args: invoke("--api-key", keyInvoker), wantCode: 2, wantStderr: []string{"flag provided but not defined: -api-key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			runCtl(t, tc)
			calls := env.Backend.CallsFor("create_note")
			if tc.subject == "" {
				if len(calls) != before {
					t.Errorf("the backend was called (%s)", tc.reason)
				}
				return
			}
			if len(calls) != before+1 || calls[before].Request.GetCaller().GetSubject() != tc.subject {
				t.Errorf("backend calls %d→%d, want one from %q (%s)", before, len(calls), tc.subject, tc.reason)
			}
		})
	}
}

// TestToolsCredentials: every tools subcommand sends the credential, unary
// and streaming alike, and the gateway's roles apply to it.
func TestToolsCredentials(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(authPolicy("")))
	dir := t.TempDir()
	tool := writeFile(t, dir, "tool.yaml", "name: ctl_tool\nbackend: 127.0.0.1:7001\ninput_schema: {type: object}\n")
	tools := func(sub string, extra ...string) []string {
		return append([]string{"tools", sub, "--addr", env.Addr, "--timeout", "10s"}, extra...)
	}
	all := []string{keyInvoker, keyAdmin, keyWrong}
	invoker := map[string]string{envAPIKey: keyInvoker}
	admin := map[string]string{envToken: keyAdmin} // an API key as a bearer token
	cases := []ctlCase{
		{name: "list-none", reason: "no credentials: Unauthenticated", args: tools("list"), wantCode: 1, wantStderr: []string{"error: Unauthenticated: "}},
		{name: "list-invoker", reason: "an invoker may list", env: invoker, args: tools("list"), wantStdout: []string{"create_note"}, secrets: all},
		{name: "register-invoker", reason: "registering needs the admin role: the invoker is identified, then refused",
			env: invoker, args: tools("register", "-f", tool), wantCode: 1, wantStderr: []string{"error: PermissionDenied: "}, secrets: all},
		{name: "register-admin", reason: "the admin's bearer key may register", env: admin, args: tools("register", "-f", tool),
			wantStdout: []string{"created ctl_tool"}, secrets: all},
		{name: "get-wrong", reason: "a wrong key is refused and not printed", env: map[string]string{envAPIKey: keyWrong},
			args: tools("get", "ctl_tool"), wantCode: 1, wantStderr: []string{"error: Unauthenticated: "}, secrets: all},
		{name: "watch-invoker", reason: "the credential rides on streams too (an invoker sees the tools it may invoke)", env: invoker, args: tools("watch", "--count", "1"),
			wantStdout: []string{"PUT "}, secrets: all},
		{name: "delete-admin", reason: "delete with the admin key", env: admin, args: tools("delete", "ctl_tool"), wantStdout: []string{"deleted ctl_tool"}},
	}
	// The cases build on each other (register before delete): each runs
	// after the ones before it (unchecked), so it also holds on its own.
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, prev := range cases[:i] {
				for _, k := range []string{envAPIKey, envToken} {
					t.Setenv(k, prev.env[k])
				}
				run(prev.args, strings.NewReader(""), io.Discard, io.Discard)
			}
			runCtl(t, tc)
		})
	}
}

// TestTLSFlags: a gateway serving TLS that verifies client certificates;
// --ca-file trusts its CA, --cert-file/--key-file identify the caller.
func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	testCA := testca.New(t)
	srvCert, srvKey := testCA.Issue(t, "gateway", true)
	cliCert, cliKey := testCA.Issue(t, "svc-agent", false)
	p := authPolicy("")
	p.Auth.MTLS = &policy.MTLSConfig{SubjectFrom: "cn", Roles: map[string][]string{"svc-agent": {policy.RoleInvoker}}}
	p.TLS = server.TLSConfig{CertFile: writeFile(t, dir, "srv.pem", string(srvCert)), KeyFile: writeFile(t, dir, "srv.key", string(srvKey)),
		ClientCAFile: writeFile(t, dir, "ca.pem", string(testCA.PEM))}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	ca := filepath.Join(dir, "ca.pem")
	cert, key := writeFile(t, dir, "cli.pem", string(cliCert)), writeFile(t, dir, "cli.key", string(cliKey))

	invoke := func(extra ...string) []string {
		return append([]string{"invoke", "create_note", "--addr", env.Addr, "--timeout", "10s", "--args", `{"title":"t"}`}, extra...)
	}
	cases := []ctlCase{
		{name: "mtls", reason: "the client certificate is the caller", args: invoke("--ca-file", ca, "--cert-file", cert, "--key-file", key), subject: "svc-agent"},
		{name: "tls-api-key", reason: "over TLS without a certificate, a key identifies the caller",
			env: map[string]string{envAPIKey: keyInvoker}, args: invoke("--ca-file", ca), subject: "invoker", secrets: []string{keyInvoker}},
		{name: "tls-no-identity", reason: "TLS alone identifies nobody", args: invoke("--ca-file", ca), wantCode: 1, wantStderr: []string{"error: Unauthenticated: "}},
		{name: "server-name-mismatch", reason: "--server-name is what the certificate is verified for",
			args: invoke("--ca-file", ca, "--server-name", "other.example"), wantCode: 1, wantStderr: []string{"error: Unavailable: ", "other.example"}},
		{name: "system-roots", reason: "--tls trusts the system roots, which do not include the test CA",
			args: invoke("--tls"), wantCode: 1, wantStderr: []string{"error: Unavailable: ", "certificate"}},
		{name: "plaintext", reason: "without TLS flags the client speaks plaintext, which a TLS gateway does not answer",
			args: invoke(), wantCode: 1, wantStderr: []string{"error: Unavailable: "}},
		{name: "ca-not-pem", reason: "a CA file without certificates is bad input naming it",
			args: invoke("--ca-file", key), wantCode: 2, wantStderr: []string{"--ca-file " + key + ": no PEM certificate found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			runCtl(t, tc)
			if calls := env.Backend.CallsFor("create_note"); tc.subject != "" &&
				(len(calls) != before+1 || calls[before].Request.GetCaller().GetSubject() != tc.subject) {
				t.Errorf("backend calls %d→%d, want one from %q (%s)", before, len(calls), tc.subject, tc.reason)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr, reason string
		want         bool
	}{
		{"127.0.0.1:7443", "IPv4 loopback", true},
		{"[::1]:7443", "IPv6 loopback", true},
		{"localhost:7443", "the loopback name", true},
		{"10.0.0.5:7443", "a network address: plaintext credentials warn", false},
		{"gw.example:7443", "a name that may resolve anywhere", false},
		{"7443", "not host:port: assume the worst", false},
	} {
		if got := loopback(tc.addr); got != tc.want {
			t.Errorf("loopback(%q) = %v, want %v (%s)", tc.addr, got, tc.want, tc.reason)
		}
	}
}
