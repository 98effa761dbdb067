package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/flowdrop/gateway/internal/oidctest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

func writeKey(t *testing.T, dir, name string, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ecKey(t *testing.T, dir, name string) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return writeKey(t, dir, name, k)
}

func secretFile(t *testing.T, secret string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNewRefuses: a Config that cannot be served is refused at load, the
// error naming the field — never a key's or a secret file's contents.
func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	key := ecKey(t, dir, "k.pem")
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not-a-key-SECRETBYTES"), 0o600)
	sign := &SigningConfig{Issuer: "https://gw", KeyFiles: []string{key}}
	secret := secretFile(t, "s3cr3t")
	xch := &ExchangeConfig{TokenURL: "https://sts.example/token", ClientID: "gw", ClientSecretFile: secret}
	cases := []struct {
		name, reason, want string
		cfg                Config
	}{
		{"unknown mode", "a mode this build does not know fails closed at load", "upstream_identity.tools[0].mode",
			Config{Tools: []Rule{{Match: "*", Mode: "authorization-code"}}}},
		{"unknown default", "the default is a mode too", "upstream_identity.default", Config{Default: "sso"}},
		{"bad glob", "a tool match is a glob", "upstream_identity.tools[0].match", Config{Tools: []Rule{{Match: "[", Mode: Static}}}},
		{"empty upstream", "an upstream rule names its upstream", "upstream_identity.upstreams[0].match", Config{Upstreams: []Rule{{Mode: Static}}}},
		{"signed without keys", "gateway-signed needs signing", "upstream_identity.signing", Config{Default: GatewaySigned}},
		{"exchange without sts", "token-exchange needs token_exchange", "upstream_identity.token_exchange", Config{Default: TokenExchange}},
		{"no issuer", "minted tokens name an issuer", "signing: issuer", Config{Signing: &SigningConfig{KeyFiles: []string{key}}}},
		{"missing key", "a key file that cannot be read", "key_files[0]", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{filepath.Join(dir, "none.pem")}}}},
		{"garbage key", "a file that is no PEM key; its bytes are not quoted", "no PEM block", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{garbage}}}},
		{"P-384", "ES256 needs P-256", "P-256", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{writeKey(t, dir, "p384.pem", p384)}}}},
		{"small RSA", "RSA under 2048 bits", "2048", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{writeKey(t, dir, "rsa.pem", small)}}}},
		{"same key twice", "a key listed twice is a mistake", "listed twice", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{key, key}}}},
		{"ttl", "a minted token lives at most an hour", "ttl", Config{Signing: &SigningConfig{Issuer: "i", KeyFiles: []string{key}, TTL: 2 * time.Hour}}},
		{"plain http STS", "the caller's token and the client secret go over TLS unless on loopback", "https",
			Config{Exchange: &ExchangeConfig{TokenURL: "http://sts.example/token", ClientID: "gw", ClientSecretFile: secret}}},
		{"no client", "the gateway authenticates to the STS", "client_id",
			Config{Exchange: &ExchangeConfig{TokenURL: "https://sts.example/token", ClientSecretFile: secret}}},
		{"empty secret", "an empty secret file", "is empty",
			Config{Exchange: &ExchangeConfig{TokenURL: "https://sts.example/token", ClientID: "gw", ClientSecretFile: secretFile(t, "\n")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q (%s)", err, tc.want, tc.reason)
			}
			if strings.Contains(err.Error(), "SECRETBYTES") || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("New: %v quotes a file's contents", err)
			}
		})
	}
	if _, err := New(Config{Default: GatewaySigned, Signing: sign, Exchange: xch}); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
}

// TestResolveChoosesMode: a tool's rule wins over its upstream's, an
// upstream rule matches the URL's origin however written, anything else
// gets the default; the audience is the rule's or the upstream's name.
func TestResolveChoosesMode(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{
		Tools:     []Rule{{Match: "billing.*", Mode: GatewaySigned, Audience: "billing-api"}, {Match: "open.*", Mode: Static}},
		Upstreams: []Rule{{Match: "https://MCP.example.com:443", Mode: Passthrough}, {Match: "10.0.0.1:9000", Mode: GatewaySigned}},
		Signing:   &SigningConfig{Issuer: "https://gw", KeyFiles: []string{ecKey(t, dir, "k.pem")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := policy.Caller{Subject: "alice", Method: policy.MethodJWT, Roles: []string{"invoker"},
		Token: policy.NewBearer("alice-token", []string{"https://mcp.example.com"}, time.Now().Add(time.Hour))}
	cases := []struct {
		name, reason string
		t            Target
		mode         Mode
		aud          string
	}{
		{"tool rule", "a tool's own rule, with its audience", Target{Tool: "billing.pay", Upstream: "https://mcp.example.com/mcp"}, GatewaySigned, "billing-api"},
		{"tool rule before upstream", "the tool's rule wins over its upstream's", Target{Tool: "open.read", Upstream: "https://mcp.example.com/mcp"}, Static, "https://mcp.example.com"},
		{"upstream origin", "the URL's origin, normalized, matches", Target{Tool: "x", Upstream: "https://mcp.example.com/mcp"}, Passthrough, "https://mcp.example.com"},
		{"grpc target", "a gRPC target as the tool names it", Target{Tool: "x", Upstream: "10.0.0.1:9000"}, GatewaySigned, "10.0.0.1:9000"},
		{"default", "nothing matches: static", Target{Tool: "x", Upstream: "https://other.example/mcp"}, Static, "https://other.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mode, aud, _ := r.rule(tc.t)
			if mode != tc.mode || aud != tc.aud {
				t.Fatalf("rule = %s %q, want %s %q (%s)", mode, aud, tc.mode, tc.aud, tc.reason)
			}
			cred, err := r.Resolve(context.Background(), alice, tc.t)
			if err != nil || cred.Mode != tc.mode || cred.Subject != "alice" {
				t.Fatalf("Resolve = %v, %v (%s)", cred, err, tc.reason)
			}
			if s := fmt.Sprintf("%v %+v %#v", cred, cred, cred); strings.Contains(s, "alice-token") || (cred.Token() != "" && strings.Contains(s, cred.Token())) {
				t.Fatal("printing a Credential shows its token")
			}
		})
	}
}

// TestResolveUnknownModeFailsClosed: a mode with no case in Resolve (one
// added to a config without its code) ends the call, Internal.
func TestResolveUnknownModeFailsClosed(t *testing.T) {
	r := &Resolver{def: "authorization-code"}
	_, err := r.Resolve(context.Background(), policy.Caller{Subject: "a"}, Target{Tool: "t"})
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Code != pipeline.Internal || !strings.Contains(pe.Message, `"t"`) {
		t.Fatalf("Resolve under an unknown mode: %v, want Internal naming the tool", err)
	}
}

// TestResolveStaticWorksOutNoAudience: a static call (the default mode,
// what every call of a policy without identity rules gets) is resolved
// without working out an audience it would not send: no allocation,
// whether its upstream is a gRPC target (which does not parse as a URL)
// or a URL, and a tool rule's static call neither.
func TestResolveStaticWorksOutNoAudience(t *testing.T) {
	r, err := New(Config{Tools: []Rule{{Match: "open.*", Mode: Static}}})
	if err != nil {
		t.Fatal(err)
	}
	caller := policy.Caller{Subject: "alice", Method: policy.MethodAPIKey}
	for _, tc := range []struct {
		reason string
		t      Target
	}{
		{"the default, a gRPC target", Target{Tool: "x", Upstream: "127.0.0.1:9000", CallID: "c1"}},
		{"the default, an upstream URL", Target{Tool: "x", Upstream: "https://mcp.example.com/mcp", CallID: "c1"}},
		{"a tool's static rule", Target{Tool: "open.read", Upstream: "10.0.0.1:9000", CallID: "c1"}},
	} {
		var cred Credential
		allocs := testing.AllocsPerRun(100, func() {
			cred, err = r.Resolve(context.Background(), caller, tc.t)
		})
		if err != nil || cred.Mode != Static || cred.Subject != "alice" {
			t.Fatalf("%s: Resolve = %v, %v; want static for alice", tc.reason, cred, err)
		}
		if allocs != 0 {
			t.Errorf("%s: Resolve allocated %v times a call; want none (no audience is sent)", tc.reason, allocs)
		}
	}
}

// TestPassthroughAudience: the caller's token is sent only when its aud
// names the upstream; otherwise, or without a token, PermissionDenied.
func TestPassthroughAudience(t *testing.T) {
	r, err := New(Config{Default: Passthrough})
	if err != nil {
		t.Fatal(err)
	}
	target := Target{Tool: "t", Upstream: "https://api.example/v1"}
	cases := []struct {
		name, reason string
		caller       policy.Caller
		ok           bool
	}{
		{"names it", "aud holds the upstream's origin", policy.Caller{Subject: "a", Token: policy.NewBearer("tok", []string{"gw", "https://api.example"}, time.Time{})}, true},
		{"another audience", "aud names something else", policy.Caller{Subject: "a", Token: policy.NewBearer("tok", []string{"gw", "https://api.example.evil"}, time.Time{})}, false},
		{"a path is not the origin", "exact match only", policy.Caller{Subject: "a", Token: policy.NewBearer("tok", []string{"https://api.example/v1"}, time.Time{})}, false},
		{"no token", "an API-key caller has none to pass", policy.Caller{Subject: "a", Method: policy.MethodAPIKey}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cred, err := r.Resolve(context.Background(), tc.caller, target)
			if tc.ok {
				if err != nil || cred.Token() != "tok" {
					t.Fatalf("Resolve = %v, %v; want the caller's token (%s)", cred, err, tc.reason)
				}
				return
			}
			var pe *pipeline.Error
			if !errors.As(err, &pe) || pe.Code != pipeline.PermissionDenied || pe.Reason != pipeline.ReasonIdentityAudience || strings.Contains(pe.Message, "api.example") {
				t.Fatalf("Resolve = %v; want PermissionDenied, identity-audience, not naming the upstream (%s)", err, tc.reason)
			}
		})
	}
}

// TestSignerMint: a minted token verifies against the published JWKS and
// says sub, aud, roles, call id, iat and exp in seconds; an anonymous
// caller's roles are left out.
func TestSignerMint(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSigner(SigningConfig{Issuer: "https://gw", KeyFiles: []string{ecKey(t, dir, "a.pem"), ecKey(t, dir, "b.pem")}, TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	if err := jsonUnmarshal(s.JWKS(), &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("JWKS: %v, %d keys", err, len(set.Keys))
	}
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		caller policy.Caller
		roles  []string
	}{
		{policy.Caller{Subject: "alice", Method: policy.MethodJWT, Roles: []string{"invoker"}}, []string{"invoker"}},
		{policy.Caller{Subject: "anonymous", Method: policy.MethodNone, Roles: []string{"admin"}}, nil},
	} {
		tok, err := s.Mint(c.caller, "https://api.example", "call-1", now)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatal(err)
		}
		if parsed.Headers[0].KeyID != set.Keys[0].KeyID {
			t.Errorf("signed with %q, want the first key %q", parsed.Headers[0].KeyID, set.Keys[0].KeyID)
		}
		var std jwt.Claims
		var extra struct {
			Roles  []string `json:"roles"`
			CallID string   `json:"call_id"`
		}
		if err := parsed.Claims(set, &std, &extra); err != nil {
			t.Fatal(err)
		}
		if err := std.ValidateWithLeeway(jwt.Expected{Issuer: "https://gw", Subject: c.caller.Subject, AnyAudience: jwt.Audience{"https://api.example"}, Time: now}, 0); err != nil {
			t.Error(err)
		}
		if std.IssuedAt.Time() != now || std.Expiry.Time() != now.Add(30*time.Second) || extra.CallID != "call-1" || fmt.Sprint(extra.Roles) != fmt.Sprint(c.roles) {
			t.Errorf("claims iat %v exp %v call %q roles %v; want iat now, exp +30s, the call id, roles %v", std.IssuedAt.Time(), std.Expiry.Time(), extra.CallID, extra.Roles, c.roles)
		}
	}
}

var (
	gwClient = oidctest.Client{ID: "gw", Secret: "gw-secret-91c"}
	alice    = oidctest.Client{ID: "alice", Secret: "a", Roles: []string{"invoker"}}
	bob      = oidctest.Client{ID: "bob", Secret: "b", Roles: []string{"invoker"}}
)

func callerOf(p *oidctest.Provider, t *testing.T, c oidctest.Client) policy.Caller {
	return policy.Caller{Subject: c.ID, Method: policy.MethodJWT, Token: policy.NewBearer(p.Token(t, c, "gw-aud"), []string{"gw-aud"}, time.Time{})}
}

// clock is a settable time for the cache.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestExchangerCache: against a real provider, an exchanged token is
// reused per (subject, audience) until RefreshBefore its expiry, then
// exchanged again; the cache holds at most MaxCached tokens.
func TestExchangerCache(t *testing.T) {
	p := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{gwClient, alice, bob}, ExchangeTTL: time.Hour})
	clk := &clock{}
	clk.ns.Store(time.Now().UnixNano())
	x, err := NewExchanger(ExchangeConfig{TokenURL: p.TokenURL, ClientID: gwClient.ID, ClientSecretFile: secretFile(t, gwClient.Secret),
		RefreshBefore: time.Minute, MaxCached: 2, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, b := callerOf(p, t, alice), callerOf(p, t, bob)
	get := func(c policy.Caller, aud string) string {
		t.Helper()
		tok, err := x.Token(ctx, c, aud, "tool")
		if err != nil {
			t.Fatalf("Token(%s, %s): %v", c.Subject, aud, err)
		}
		return tok
	}
	steps := []struct {
		reason string
		do     func() string
		sent   int64 // exchanges so far
	}{
		{"first: exchanged", func() string { return get(a, "https://one.example") }, 1},
		{"again: cached", func() string { return get(a, "https://one.example") }, 1},
		{"another audience: exchanged", func() string { return get(a, "https://two.example") }, 2},
		{"another subject: exchanged (never another's token)", func() string { return get(b, "https://one.example") }, 3},
		{"the LRU held 2: alice/one was evicted", func() string { return get(a, "https://one.example") }, 4},
		{"near expiry (within RefreshBefore): exchanged again", func() string { clk.advance(time.Hour - 30*time.Second); return get(a, "https://one.example") }, 5},
	}
	for _, s := range steps {
		s.do()
		if n := x.Exchanges(); n != s.sent {
			t.Fatalf("%s: %d exchanges, want %d", s.reason, n, s.sent)
		}
	}
	if p.Exchanges() != x.Exchanges() {
		t.Errorf("the provider answered %d exchanges, the exchanger sent %d", p.Exchanges(), x.Exchanges())
	}
}

// TestExchangerCoalesces: concurrent misses for one (subject, audience)
// send one exchange; each caller gets its answer.
func TestExchangerCoalesces(t *testing.T) {
	p := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{gwClient, alice}})
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.TokenURL, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 64<<10)
		n, _ := resp.Body.Read(buf)
		w.Write(buf[:n])
	}))
	defer gate.Close()
	x, err := NewExchanger(ExchangeConfig{TokenURL: gate.URL, ClientID: gwClient.ID, ClientSecretFile: secretFile(t, gwClient.Secret)})
	if err != nil {
		t.Fatal(err)
	}
	a := callerOf(p, t, alice)
	const n = 8
	var wg sync.WaitGroup
	toks := make([]string, n)
	wg.Go(func() {
		toks[0], _ = x.Token(context.Background(), a, "https://one.example", "tool")
	})
	<-arrived // the first exchange is at the STS, held
	for i := 1; i < n; i++ {
		wg.Go(func() {
			toks[i], _ = x.Token(context.Background(), a, "https://one.example", "tool")
		})
	}
	// The others are given time to arrive at the STS if they were going
	// to (they would without coalescing); then the STS answers.
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	if len(arrived) != 0 || x.Exchanges() != 1 {
		t.Fatalf("%d exchanges for %d concurrent misses, want 1", x.Exchanges(), n)
	}
	for i, tok := range toks {
		if tok == "" || tok != toks[0] {
			t.Fatalf("caller %d got %q, want the one exchanged token", i, tok)
		}
	}
}

// TestExchangerFailsClosed: the STS's refusal is PermissionDenied
// (identity-refused), its outage or nonsense Unavailable
// (identity-unavailable); neither error carries the caller's token, the
// client secret or the STS's answer, and no redirect is followed.
func TestExchangerFailsClosed(t *testing.T) {
	p := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{gwClient, alice}})
	var followed atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer elsewhere.Close()
	answer := func(status int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if status == http.StatusFound {
				http.Redirect(w, r, elsewhere.URL, status)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	cases := []struct {
		name, reason, url string
		caller            policy.Caller
		code              pipeline.Code
		want              pipeline.Reason
	}{
		{"subject token refused", "the real provider refuses a token it did not issue", p.TokenURL,
			policy.Caller{Subject: "alice", Token: policy.NewBearer("not-a-token-LEAK", nil, time.Time{})}, pipeline.PermissionDenied, pipeline.ReasonIdentityRefused},
		{"wrong client secret", "an STS refusing the gateway is a refusal too", "", callerOf(p, t, alice), pipeline.PermissionDenied, pipeline.ReasonIdentityRefused},
		{"no token", "an API-key caller has nothing to exchange", p.TokenURL, policy.Caller{Subject: "k", Method: policy.MethodAPIKey}, pipeline.PermissionDenied, pipeline.ReasonIdentityRefused},
		{"STS error", "a 500 is an outage", answer(500, `{"error":"server_error","error_description":"LEAK"}`), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
		{"not a token answer", "a 200 without access_token", answer(200, `{"LEAK":1}`), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
		{"not bearer", "a token of another type cannot be sent as bearer", answer(200, `{"access_token":"LEAK","token_type":"DPoP","expires_in":60}`), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
		{"header injection", "a token that is not one header value", answer(200, `{"access_token":"a\r\nX-LEAK: 1","token_type":"Bearer"}`), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
		{"too large", "the answer is bounded", answer(200, `{"access_token":"`+strings.Repeat("A", 70<<10)+`","token_type":"Bearer"}`), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
		{"redirect", "the secret and token are not sent elsewhere", answer(http.StatusFound, ""), callerOf(p, t, alice), pipeline.Unavailable, pipeline.ReasonIdentityUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, secret := tc.url, gwClient.Secret
			if url == "" {
				url, secret = p.TokenURL, "wrong-secret"
			}
			x, err := NewExchanger(ExchangeConfig{TokenURL: url, ClientID: gwClient.ID, ClientSecretFile: secretFile(t, secret)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Token(context.Background(), tc.caller, "https://one.example", "the-tool")
			var pe *pipeline.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Reason != tc.want || !strings.Contains(pe.Message, "the-tool") {
				t.Fatalf("Token: %v, want %v %s naming the tool (%s)", err, tc.code, tc.want, tc.reason)
			}
			all := pe.Message
			if pe.Cause != nil {
				all += pe.Cause.Error()
			}
			for _, secret := range []string{"LEAK", tc.caller.Token.Raw(), gwClient.Secret, "wrong-secret"} {
				if secret != "" && strings.Contains(all, secret) {
					t.Fatalf("the error (message or cause) %q carries a token, a secret or the STS's answer", all)
				}
			}
		})
	}
	if followed.Load() {
		t.Error("a redirect from the STS was followed")
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
