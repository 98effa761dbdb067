package policy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	secretKey = "fd_live_5b0f0c8e2d4a4f7b9c1e3a5d7f9b1c3e" // test-only API key
	otherKey  = "fd_live_00000000000000000000000000000000"
)

func TestPolicyAuthenticate(t *testing.T) {
	keys := newTestKeys(t)
	a, err := NewAuthenticator(t.Context(), AuthConfig{
		Mode: AuthOn,
		APIKeys: []APIKey{
			{Name: "ci-bot", SHA256: HashAPIKey(secretKey), Roles: []string{RoleInvoker}},
			{Name: "other", SHA256: strings.TrimPrefix(HashAPIKey(otherKey), "sha256:"), Roles: []string{RoleAdmin}},
		},
		JWT:  &JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSFile: keys.file(t)},
		MTLS: &MTLSConfig{SubjectFrom: "cn", Roles: map[string][]string{"svc-a": {RoleInvoker}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	expired := validClaims("alice")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	wrongAud := validClaims("alice")
	wrongAud["aud"] = "someone-else"
	wrongIss := validClaims("alice")
	wrongIss["iss"] = "https://evil.test"
	noExp := validClaims("alice")
	delete(noExp, "exp")
	noSub := validClaims("")
	notYet := validClaims("alice")
	notYet["nbf"] = time.Now().Add(time.Hour).Unix()
	strangerEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	none := mintNone(t, validClaims("alice"))
	hs := mint(t, jwt.SigningMethodHS256, "rsa-1", []byte("n-of-the-rsa-key-as-hmac-secret"), validClaims("alice"))

	cases := []struct {
		reason     string
		creds      Credentials
		wantReason string // "" = allowed
		wantCaller Caller
	}{
		{reason: "no credentials at all", creds: Credentials{}, wantReason: ReasonCredentialsMissing},
		{reason: "unknown API key", creds: Credentials{APIKey: "fd_live_nope"}, wantReason: ReasonAPIKeyUnknown},
		{reason: "known API key", creds: Credentials{APIKey: secretKey}, wantCaller: Caller{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}}},
		{reason: "hash configured without the sha256: prefix", creds: Credentials{APIKey: otherKey}, wantCaller: Caller{Subject: "other", Method: MethodAPIKey, Roles: []string{RoleAdmin}}},
		{reason: "valid RS256 JWT", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("alice"))},
			wantCaller: Caller{Subject: "alice", Method: MethodJWT, Roles: []string{RoleInvoker}}},
		{reason: "valid ES256 JWT", creds: Credentials{Bearer: mint(t, jwt.SigningMethodES256, "ec-1", keys.ec, validClaims("bob"))},
			wantCaller: Caller{Subject: "bob", Method: MethodJWT, Roles: []string{RoleInvoker}}},
		{reason: "expired JWT", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, expired)}, wantReason: ReasonJWTExpired},
		{reason: "JWT for another audience", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, wrongAud)}, wantReason: ReasonJWTAudience},
		{reason: "JWT from another issuer", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, wrongIss)}, wantReason: ReasonJWTIssuer},
		{reason: "JWT without exp", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, noExp)}, wantReason: ReasonJWTClaims},
		{reason: "JWT without sub", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, noSub)}, wantReason: ReasonJWTClaims},
		{reason: "JWT not valid yet", creds: Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, notYet)}, wantReason: ReasonJWTNotYetValid},
		{reason: "alg none refused", creds: Credentials{Bearer: none}, wantReason: ReasonJWTAlgorithm},
		{reason: "HS256 refused (no algorithm confusion)", creds: Credentials{Bearer: hs}, wantReason: ReasonJWTAlgorithm},
		{reason: "JWT signed by a key not in the JWKS, known kid", creds: Credentials{Bearer: mint(t, jwt.SigningMethodES256, "ec-1", strangerEC, validClaims("alice"))}, wantReason: ReasonJWTSignature},
		{reason: "JWT with an unknown kid", creds: Credentials{Bearer: mint(t, jwt.SigningMethodES256, "ec-9", strangerEC, validClaims("alice"))}, wantReason: ReasonJWTKeyUnknown},
		{reason: "garbage bearer", creds: Credentials{Bearer: "not.a.jwt"}, wantReason: ReasonJWTMalformed},
		{reason: "an API key sent as a bearer token is accepted with JWT configured too (docs/agents.md's \"Bearer <api key or JWT>\")",
			creds: Credentials{Bearer: secretKey}, wantCaller: Caller{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}}},
		{reason: "a present but wrong API key does not fall through to a valid JWT",
			creds: Credentials{APIKey: "wrong", Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("alice"))}, wantReason: ReasonAPIKeyUnknown},
		{reason: "verified client cert, CN mapped", creds: Credentials{PeerCerts: []*x509.Certificate{{Subject: pkix.Name{CommonName: "svc-a"}}}},
			wantCaller: Caller{Subject: "svc-a", Method: MethodMTLS, Roles: []string{RoleInvoker}}},
		{reason: "client cert without CN", creds: Credentials{PeerCerts: []*x509.Certificate{{}}}, wantReason: ReasonMTLSSubject},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			c, err := a.Authenticate(t.Context(), tc.creds)
			// Screen (before a message is read) must answer the same
			// whenever nothing needs fetching, as here (a JWKS file).
			sc, verified, serr := a.Screen(tc.creds)
			if verified != (err == nil) || sc.Subject != c.Subject || sc.Method != c.Method || !sameReason(serr, err) {
				t.Errorf("Screen = %+v, verified %v, %v; Authenticate = %+v, %v", sc, verified, serr, c, err)
			}
			if tc.wantReason != "" {
				pe := wantPolicyError(t, err, Unauthenticated, tc.wantReason)
				for _, secret := range []string{tc.creds.APIKey, tc.creds.Bearer} {
					if secret != "" && strings.Contains(pe.Error(), secret) {
						t.Fatalf("error %q echoes the credential", pe.Error())
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if c.Subject != tc.wantCaller.Subject || c.Method != tc.wantCaller.Method || strings.Join(c.Roles, ",") != strings.Join(tc.wantCaller.Roles, ",") {
				t.Fatalf("caller = %+v, want %+v", c, tc.wantCaller)
			}
			// A JWT caller carries its verified token for the identity
			// modes (its aud and exp too), which no print of it shows.
			if c.Method == MethodJWT {
				if c.Token.Raw() != tc.creds.Bearer || sc.Token.Raw() != tc.creds.Bearer || len(c.Token.Audience) == 0 || c.Token.Expiry.IsZero() {
					t.Fatalf("caller's token: raw kept %v, aud %v, exp %v; want the verified token with its aud and exp", c.Token.Raw() == tc.creds.Bearer, c.Token.Audience, c.Token.Expiry)
				}
				js, _ := json.Marshal(c)
				if printed := fmt.Sprintf("%v %+v %#v %s", c, c, c, js); strings.Contains(printed, tc.creds.Bearer) {
					t.Fatal("printing the caller shows its token")
				}
			} else if c.Token != nil {
				t.Fatalf("a %s caller carries a bearer token", c.Method)
			}
		})
	}
}

func mintNone(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPolicyAuthenticateSANURIAndDefaultRoles(t *testing.T) {
	a, err := NewAuthenticator(t.Context(), AuthConfig{Mode: AuthOn,
		MTLS: &MTLSConfig{SubjectFrom: "san-uri", DefaultRoles: []string{RoleInvoker}}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("spiffe://flowdrop.test/agent")
	c, err := a.Authenticate(t.Context(), Credentials{PeerCerts: []*x509.Certificate{{URIs: []*url.URL{u}, Subject: pkix.Name{CommonName: "ignored"}}}})
	if err != nil || c.Subject != u.String() || !c.HasRole(RoleInvoker) {
		t.Fatalf("got %+v, %v", c, err)
	}
	// A bearer token with no JWT or API keys configured names the method as disabled.
	_, err = a.Authenticate(t.Context(), Credentials{Bearer: "x"})
	wantPolicyError(t, err, Unauthenticated, ReasonAuthMethodDisabled)
}

func TestPolicyAuthOffIsExplicit(t *testing.T) {
	if _, err := NewAuthenticator(t.Context(), AuthConfig{}); err == nil {
		t.Fatal("empty mode accepted; authentication must be turned off explicitly")
	}
	a, err := NewAuthenticator(t.Context(), AuthConfig{Mode: AuthOff})
	if err != nil || !a.Off() {
		t.Fatalf("off: %v %v", a, err)
	}
	c, err := a.Authenticate(t.Context(), Credentials{})
	if err != nil || c.Method != MethodNone {
		t.Fatalf("got %+v %v", c, err)
	}
}

func TestPolicyAuthConfigErrors(t *testing.T) {
	cases := []struct {
		reason string
		cfg    AuthConfig
		want   string
	}{
		{"unknown mode", AuthConfig{Mode: "maybe"}, `mode "maybe"`},
		{"on without any method", AuthConfig{Mode: AuthOn}, "at least one"},
		{"API key hash not hex", AuthConfig{Mode: AuthOn, APIKeys: []APIKey{{Name: "k", SHA256: "plaintext-key"}}}, `api key "k"`},
		{"duplicate key name", AuthConfig{Mode: AuthOn, APIKeys: []APIKey{{Name: "k", SHA256: HashAPIKey("a")}, {Name: "k", SHA256: HashAPIKey("b")}}}, "duplicate"},
		{"JWT with HS256 configured", AuthConfig{Mode: AuthOn, JWT: &JWTConfig{Issuer: "i", Audience: "a", JWKSFile: "x", Algorithms: []string{"HS256"}}}, "HS256"},
		{"JWT without audience", AuthConfig{Mode: AuthOn, JWT: &JWTConfig{Issuer: "i", JWKSFile: "x"}}, "audience"},
		{"JWKS over plain http to a remote host", AuthConfig{Mode: AuthOn, JWT: &JWTConfig{Issuer: "i", Audience: "a", JWKSURL: "http://idp.example.com/jwks"}}, "https"},
		{"mtls subject source unknown", AuthConfig{Mode: AuthOn, MTLS: &MTLSConfig{SubjectFrom: "email"}}, "subject_from"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := NewAuthenticator(t.Context(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "plaintext-key") {
				t.Fatalf("config error echoes the configured value: %v", err)
			}
		})
	}
}

func TestPolicyJWKSURLFetchedAndRefreshedOnUnknownKid(t *testing.T) {
	keys := newTestKeys(t)
	var served atomic.Pointer[[]byte]
	served.Store(&keys.jwksRaw)
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*served.Load())
	}))
	defer ts.Close()
	if !strings.HasPrefix(ts.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", ts.URL)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a, err := NewAuthenticator(ctx, AuthConfig{Mode: AuthOn, JWT: &JWTConfig{
		Issuer: testIssuer, Audience: testAudience, JWKSURL: ts.URL, HTTPClient: client, FetchTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if hits.Load() < 1 {
		t.Fatal("JWKS was not fetched at start-up")
	}
	c, err := a.Authenticate(ctx, Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("carol"))})
	if err != nil || c.Subject != "carol" {
		t.Fatalf("got %+v %v", c, err)
	}
	// Rotate: the IdP now serves a new key set; a token with the new kid
	// triggers a refetch rather than needing a restart.
	rotated := newTestKeysGen(t, "2")
	served.Store(&rotated.jwksRaw)
	before := hits.Load()
	c, err = a.Authenticate(ctx, Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-2", rotated.rsa, validClaims("dave"))})
	if err != nil || c.Subject != "dave" {
		t.Fatalf("after rotation: got %+v %v", c, err)
	}
	if hits.Load() <= before {
		t.Fatal("unknown kid did not refetch the JWKS")
	}
	// The old key is gone from the set: its tokens no longer verify.
	_, err = a.Authenticate(ctx, Credentials{Bearer: mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("carol"))})
	wantPolicyError(t, err, Unauthenticated, ReasonJWTKeyUnknown)
}

func TestPolicyJWKSURLUnreachableFailsAtStartup(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	u := ts.URL
	ts.Close() // nothing listens any more
	_, err := NewAuthenticator(t.Context(), AuthConfig{Mode: AuthOn, JWT: &JWTConfig{
		Issuer: testIssuer, Audience: testAudience, JWKSURL: u, FetchTimeout: 2 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "jwks_url") {
		t.Fatalf("err = %v, want a jwks_url start-up error", err)
	}
}

// sameReason reports whether two authentication results refuse alike
// (both nil, or the same code, reason and message).
func sameReason(a, b error) bool {
	pa, oka := AsError(a)
	pb, okb := AsError(b)
	if !oka || !okb {
		return a == nil && b == nil
	}
	return pa.Code == pb.Code && pa.Reason == pb.Reason && pa.Message == pb.Message
}

// TestPolicyScreenNeverFetches: with a JWKS URL, Screen answers from the
// cached set: a token whose key is cached is verified in full; one with an
// unknown kid is checked for form, algorithm and claims only (verified
// false) and no fetch is made — Authenticate, afterwards, fetches.
func TestPolicyScreenNeverFetches(t *testing.T) {
	keys := newTestKeys(t)
	rotated := newTestKeysGen(t, "2")
	var served atomic.Pointer[[]byte]
	served.Store(&keys.jwksRaw)
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*served.Load())
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a, err := NewAuthenticator(ctx, AuthConfig{Mode: AuthOn, JWT: &JWTConfig{
		Issuer: testIssuer, Audience: testAudience, JWKSURL: ts.URL, HTTPClient: client, FetchTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	served.Store(&rotated.jwksRaw) // a refetch would now find rsa-2
	expired := validClaims("erin")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	wrongAud := validClaims("erin")
	wrongAud["aud"] = "someone-else"
	cases := []struct {
		reason       string
		token        string
		wantVerified bool
		wantReason   string // "" = passed
	}{
		{"a cached key: verified in full", mint(t, jwt.SigningMethodRS256, "rsa-1", keys.rsa, validClaims("carol")), true, ""},
		{"a cached kid with another key's signature: refused", mint(t, jwt.SigningMethodRS256, "rsa-1", rotated.rsa, validClaims("carol")), false, ReasonJWTSignature},
		{"an unknown kid, claims right: passed unverified", mint(t, jwt.SigningMethodRS256, "rsa-2", rotated.rsa, validClaims("dave")), false, ""},
		{"an unknown kid, expired: refused on its claims", mint(t, jwt.SigningMethodRS256, "rsa-2", rotated.rsa, expired), false, ReasonJWTExpired},
		{"an unknown kid, another audience: refused on its claims", mint(t, jwt.SigningMethodRS256, "rsa-2", rotated.rsa, wrongAud), false, ReasonJWTAudience},
		{"an unknown kid, no subject: refused on its claims", mint(t, jwt.SigningMethodRS256, "rsa-2", rotated.rsa, validClaims("")), false, ReasonJWTClaims},
		{"an unknown kid, HS256: refused on its algorithm", mint(t, jwt.SigningMethodHS256, "rsa-2", []byte("secret"), validClaims("dave")), false, ReasonJWTAlgorithm},
		{"not a JWT: refused", "a.b", false, ReasonJWTMalformed},
	}
	before := hits.Load()
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			c, verified, err := a.Screen(Credentials{Bearer: tc.token})
			if tc.wantReason != "" {
				wantPolicyError(t, err, Unauthenticated, tc.wantReason)
				return
			}
			if err != nil || verified != tc.wantVerified || (verified && c.Subject != "carol") || (!verified && c.Subject != "") {
				t.Fatalf("Screen = %+v, verified %v, %v; want verified %v", c, verified, err, tc.wantVerified)
			}
		})
	}
	if n := hits.Load() - before; n != 0 {
		t.Fatalf("Screen fetched the JWKS %d times", n)
	}
	c, err := a.Authenticate(ctx, Credentials{Bearer: cases[2].token})
	if err != nil || c.Subject != "dave" || hits.Load() == before {
		t.Fatalf("Authenticate after Screen: %+v, %v, fetches %d; want dave, after a fetch", c, err, hits.Load()-before)
	}
}
