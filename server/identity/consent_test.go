package identity

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

func consentFiles(t *testing.T) (key, secret string) {
	t.Helper()
	dir := t.TempDir()
	key, secret = filepath.Join(dir, "key"), filepath.Join(dir, "secret")
	if err := os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, secret
}

func validConsent(key, secret string) ConsentConfig {
	return ConsentConfig{RedirectURL: "https://gw.example/oauth/upstream/callback", KeyFiles: []string{key}, BoltFile: "/var/lib/t.db",
		Clients: []OAuthClient{{Name: "gh", AuthURL: "https://a.example/authorize", TokenURL: "https://a.example/token", ClientID: "c", ClientSecretFile: secret}}}
}

// TestConsentConfigCheck: what user_consent is refused for, each naming the field.
func TestConsentConfigCheck(t *testing.T) {
	t.Parallel()
	key, secret := consentFiles(t)
	for _, tc := range []struct {
		name   string
		change func(*ConsentConfig)
		want   string
		reason string
	}{
		{"valid", func(*ConsentConfig) {}, "", "endpoints given, bolt store"},
		{"http redirect", func(c *ConsentConfig) { c.RedirectURL = "http://gw.example/oauth/upstream/callback" }, "redirect_url: must be https", "a code would travel in the clear"},
		{"loopback http", func(c *ConsentConfig) { c.RedirectURL = "http://127.0.0.1:8080/oauth/upstream/callback" }, "", "loopback may be plain http"},
		{"other path", func(c *ConsentConfig) { c.RedirectURL = "https://gw.example/callback" }, "its path must end in /oauth/upstream/callback", "the gateway serves it there only"},
		{"query", func(c *ConsentConfig) { c.RedirectURL += "?x=1" }, "without query", "the server appends code and state"},
		{"no key", func(c *ConsentConfig) { c.KeyFiles = nil }, "key_files", "tokens are stored sealed"},
		{"two stores", func(c *ConsentConfig) { c.Redis = true }, "exactly one", "bolt and redis both named"},
		{"no store", func(c *ConsentConfig) { c.BoltFile = "" }, "exactly one", "nowhere to store"},
		{"no client", func(c *ConsentConfig) { c.Clients = nil }, "clients", "nothing to authorize at"},
		{"bad name", func(c *ConsentConfig) { c.Clients[0].Name = "a b" }, "name", "names key the store and show in flowdropctl"},
		{"issuer and endpoints", func(c *ConsentConfig) { c.Clients[0].Issuer = "https://a.example" }, "give issuer", "one way to find the endpoints"},
		{"token url only", func(c *ConsentConfig) { c.Clients[0].AuthURL = "" }, "give issuer", "both endpoints or discovery"},
		{"http token url", func(c *ConsentConfig) { c.Clients[0].TokenURL = "http://a.example/token" }, "not an https URL", "the secret would travel in the clear"},
		{"negative", func(c *ConsentConfig) { c.MaxTokens = -1 }, "must not be negative", "bounds"},
		{"verify_caller", func(c *ConsentConfig) {
			c.VerifyCaller = &VerifyCaller{Issuer: "https://idp.example", ClientID: "gw", ClientSecretFile: secret}
		}, "", "the browser's person checked at the callers' provider"},
		{"verify_caller http issuer", func(c *ConsentConfig) {
			c.VerifyCaller = &VerifyCaller{Issuer: "http://idp.example", ClientID: "gw", ClientSecretFile: secret}
		}, "verify_caller.issuer", "the code and the secret would travel in the clear"},
		{"verify_caller no client", func(c *ConsentConfig) { c.VerifyCaller = &VerifyCaller{Issuer: "https://idp.example"} }, "verify_caller: issuer, client_id",
			"the gateway is a client of the provider"},
	} {
		c := validConsent(key, secret)
		tc.change(&c)
		err := checkConsent(c)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v; want %q (%s)", tc.name, err, tc.want, tc.reason)
		}
	}
	// Rules: user-consent names a configured client; others name none.
	c := validConsent(key, secret)
	for _, tc := range []struct {
		rule   Rule
		want   string
		reason string
	}{
		{Rule{Match: "x", Mode: UserConsent, Client: "gh"}, "", "a configured client"},
		{Rule{Match: "x", Mode: UserConsent, Client: "nope"}, "not one of user_consent.clients", "an unknown client"},
		{Rule{Match: "x", Mode: Static, Client: "gh"}, "only the user-consent mode", "a client on another mode is a mistake"},
	} {
		err := Check(Config{Tools: []Rule{tc.rule}, Consent: &c})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v; want %q (%s)", tc.rule, err, tc.want, tc.reason)
		}
	}
	if err := Check(Config{Tools: []Rule{{Match: "x", Mode: UserConsent, Client: "gh"}}}); err == nil || !strings.Contains(err.Error(), "user_consent section") {
		t.Errorf("user-consent without the section: %v", err)
	}
}

// TestConsentRefusals: Token fails closed without a subject or a store,
// and asks to authorize when no token is stored or its row does not open.
func TestConsentRefusals(t *testing.T) {
	t.Parallel()
	key, secret := consentFiles(t)
	c := validConsent(key, secret)
	store, err := OpenBoltTokenStore(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c.Store = store
	k, err := NewConsent(c)
	if err != nil {
		t.Fatal(err)
	}
	alice := policy.Caller{Subject: "alice", Method: policy.MethodJWT}
	reasonOf := func(err error) pipeline.Reason {
		var e *pipeline.Error
		if errors.As(err, &e) {
			return e.Reason
		}
		return ""
	}
	ctx := context.Background()
	if _, err := k.Token(ctx, policy.Caller{Method: policy.MethodNone}, "gh", "t"); reasonOf(err) != pipeline.ReasonIdentityRefused {
		t.Errorf("anonymous: %v; want identity-refused (no subject to keep a token for)", err)
	}
	_, err = k.Token(ctx, alice, "gh", "t")
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Reason != pipeline.ReasonIdentityConsentRequired || !strings.HasPrefix(pe.AuthorizationURL, "https://gw.example"+StartPath+"?s=") {
		t.Fatalf("no token: %v; want identity-consent-required with the start link", err)
	}
	// A row copied from another pair (or tampered) does not open.
	if err := store.Put(ctx, "bob", "gh", []byte(k.keys.Seal(tokenPurpose("bob", "gh"), []byte(`{"a":"bobs"}`))), 10); err != nil {
		t.Fatal(err)
	}
	row, _ := store.Get(ctx, "bob", "gh")
	if err := store.Put(ctx, "alice", "gh", row, 10); err != nil {
		t.Fatal(err)
	}
	if tok, err := k.Token(ctx, alice, "gh", "t"); reasonOf(err) != pipeline.ReasonIdentityConsentRequired {
		t.Fatalf("bob's row under alice: %q, %v; want identity-consent-required (the row is bound to its pair)", tok, err)
	}
	if tok, err := k.Token(ctx, policy.Caller{Subject: "bob", Method: policy.MethodJWT}, "gh", "t"); err != nil || tok != "bobs" {
		t.Fatalf("bob's own row: %q, %v", tok, err)
	}
	c.Store = nil
	k2, _ := NewConsent(c)
	if _, err := k2.Token(ctx, alice, "gh", "t"); reasonOf(err) != pipeline.ReasonIdentityUnavailable {
		t.Errorf("no store: %v; want identity-unavailable (fail closed)", err)
	}
}

// TestConsentEndpoints: the start link and the callback's state are
// refused when tampered with, expired, or (the callback) without the
// browser's cookie; a good link redirects to the authorization server
// with PKCE S256 and sets the cookie.
func TestConsentEndpoints(t *testing.T) {
	t.Parallel()
	key, secret := consentFiles(t)
	c := validConsent(key, secret)
	now := time.Now()
	c.Now = func() time.Time { return now }
	k, err := NewConsent(c)
	if err != nil {
		t.Fatal(err)
	}
	h := ConsentHandler(func() *Consent { return k }, slog.New(slog.DiscardHandler))
	get := func(target string, cookies ...*http.Cookie) *http.Response {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		for _, ck := range cookies {
			r.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	link := k.StartURL("alice", "gh")
	u, _ := url.Parse(link)
	s := u.Query().Get("s")
	tampered := s[:len(s)-2] + "AA"
	if resp := get(StartPath + "?s=" + tampered); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("tampered link: %d, want 400", resp.StatusCode)
	}
	resp := get(StartPath + "?s=" + s)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Host != "a.example" || loc.Query().Get("code_challenge_method") != "S256" ||
		loc.Query().Get("code_challenge") == "" || loc.Query().Get("redirect_uri") != c.RedirectURL || len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("start: %d %s; want a redirect with PKCE S256 and an HttpOnly cookie", resp.StatusCode, loc)
	}
	cookie, state := resp.Cookies()[0], loc.Query().Get("state")
	body := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }
	if r := get(CallbackPath + "?code=x&state=" + url.QueryEscape(state)); r.StatusCode != http.StatusBadRequest || !strings.Contains(body(r), "another browser") {
		t.Errorf("callback without the cookie: %d; want 400 (another browser)", r.StatusCode)
	}
	if r := get(CallbackPath+"?code=x&state="+url.QueryEscape(state), &http.Cookie{Name: consentCookie, Value: "other"}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("callback with another cookie: %d; want 400", r.StatusCode)
	}
	if r := get(CallbackPath+"?code=x&state="+url.QueryEscape(k.keys.Seal(purposeStart, []byte(`{}`))), cookie); r.StatusCode != http.StatusBadRequest {
		t.Errorf("callback with a value sealed for another purpose: %d; want 400", r.StatusCode)
	}
	if r := get(CallbackPath+"?error=access_denied&state="+url.QueryEscape(state), cookie); r.StatusCode != http.StatusForbidden || !strings.Contains(body(r), "access_denied") {
		t.Errorf("callback with the server's refusal: %d; want 403 naming it", r.StatusCode)
	}
	now = now.Add(DefaultConsentStateTTL + time.Second)
	if r := get(StartPath + "?s=" + s); r.StatusCode != http.StatusBadRequest {
		t.Errorf("expired link: %d, want 400", r.StatusCode)
	}
	if r := get(CallbackPath+"?code=x&state="+url.QueryEscape(state), cookie); r.StatusCode != http.StatusBadRequest {
		t.Errorf("expired state: %d, want 400", r.StatusCode)
	}
	if r := get(StartPath, cookie); r.Header.Get("Cache-Control") != "no-store" {
		t.Error("the flow's pages must not be cached")
	}
}
