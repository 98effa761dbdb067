package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/oidctest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/identity"
)

// idGatewayLogin is the gateway's client at the callers' provider
// (user_consent.verify_caller); the tests' one provider is both the
// callers' and the upstream's.
var idGatewayLogin = oidctest.Client{ID: "gateway-login", Secret: "gateway-login-secret-5c0e"}

// withVerifyCaller is a startConsent store hook: the bolt store, and
// verify_caller at the provider the upstream client uses.
func withVerifyCaller(t *testing.T) func(*identity.ConsentConfig, *server.Config) {
	return func(k *identity.ConsentConfig, _ *server.Config) {
		dir := filepath.Dir(k.Clients[0].ClientSecretFile)
		k.BoltFile = filepath.Join(dir, "usertokens.db")
		secret := filepath.Join(dir, "login.secret")
		writeFile(t, secret, idGatewayLogin.Secret)
		k.VerifyCaller = &identity.VerifyCaller{Issuer: k.Clients[0].Issuer, ClientID: idGatewayLogin.ID, ClientSecretFile: secret}
	}
}

// TestIdentityUserConsentVerifyCaller: with verify_caller, alice's link
// opened in a browser signed in at the callers' provider as bob is
// refused 403 and stores nothing (without the check bob's upstream
// account would be bound to alice); opened as alice it is stored and the
// upstream sees alice; with the provider down, start answers 503 and
// stores nothing.
func TestIdentityUserConsentVerifyCaller(t *testing.T) {
	t.Parallel()
	c := startConsent(t, withVerifyCaller(t))
	ctx := testCtx(t)
	stored := func() int {
		t.Helper()
		l, err := c.env.Gateway.UserConsent().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}

	if strings.Contains(c.logs.String(), "has no verify_caller") {
		t.Fatal("start-up warned of no verify_caller with verify_caller set")
	}
	_, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a0")
	link := c.consentRequired(t, err)

	code, text := c.authorize(t, c.prov.Browser(t, "bob"), link)
	if code != http.StatusForbidden || !strings.Contains(text, "someone other than the caller") {
		t.Fatalf("alice's link opened as bob: %d %q; want 403 naming the wrong person\n%s", code, text, c.logs)
	}
	for _, leak := range []string{c.prov.Issuer, "127.0.0.1", idGatewayLogin.Secret, "token"} {
		if strings.Contains(text, leak) {
			t.Fatalf("the refusal %q names %q", text, leak)
		}
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d tokens stored after bob opened alice's link; want none", n)
	}
	_, err = idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a1")
	c.consentRequired(t, err)
	if !strings.Contains(c.logs.String(), "the browser's person is not the link's subject") {
		t.Fatal("the refusal was not logged")
	}

	code, text = c.authorize(t, c.prov.Browser(t, "alice"), link)
	if code != http.StatusOK || !strings.Contains(text, "Authorized") {
		t.Fatalf("alice's link opened as alice: %d %q", code, text)
	}
	if got, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a2"); err != nil || got != "alice" {
		t.Fatalf("alice after authorizing: %q, %v; want the upstream to verify alice", got, err)
	}

	_, err = idCall(ctx, c.env, c.toks["bob"], "id.mcp", "b0")
	bobLink := c.consentRequired(t, err)
	c.prov.Stop()
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(bobLink)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("start with the callers' provider down: %d (Location %q); want 503", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := stored(); n != 1 {
		t.Fatalf("%d tokens stored; want alice's only", n)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "usertokens.db")); err != nil {
		t.Fatalf("the bolt store: %v", err)
	}
}
