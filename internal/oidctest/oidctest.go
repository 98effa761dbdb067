// Package oidctest starts a real OAuth 2 / OpenID provider on loopback for
// tests: zitadel/oidc's op package (its token endpoint, RFC 8693 token
// exchange, JWKS and discovery) over a minimal in-memory storage. Callers
// get JWT access tokens by client credentials (each client is a subject
// with roles; "aud:X" scopes choose the audiences); the gateway exchanges
// them as a confidential client. A client with RedirectURIs is an
// authorization-code client (PKCE S256, refresh tokens with
// offline_access): its login page approves, without asking, the user a
// test's browser names in a cookie (Browser), so the whole flow runs
// non-interactively.
package oidctest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a client of the provider: a caller (client credentials; its
// ID is the tokens' subject) or the gateway (token exchange).
type Client struct {
	ID, Secret string
	// Roles go into the subject's tokens' "roles" claim.
	Roles []string
	// RedirectURIs make it an authorization-code client (plain http is
	// accepted: the provider is on loopback).
	RedirectURIs []string
}

// Options configure a Provider.
type Options struct {
	Clients []Client
	// AccessTTL is the lifetime of client-credentials tokens (0: 1h);
	// ExchangeTTL of exchanged ones (0: 1h).
	AccessTTL, ExchangeTTL time.Duration
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL (http on loopback); TokenURL, JWKSURL and
	// AuthURL its endpoints.
	Issuer, TokenURL, JWKSURL, AuthURL string

	srv   *http.Server
	lis   net.Listener
	store *storage
}

// Start starts a provider on loopback; the test's cleanup stops it.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + lis.Addr().String()
	s, err := newStorage(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &op.Config{CryptoKey: sha256.Sum256([]byte("oidctest")), CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true}
	prov, err := op.NewProvider(cfg, s, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: issuer, TokenURL: issuer + "/oauth/token", JWKSURL: issuer + "/keys", AuthURL: issuer + "/authorize", lis: lis, store: s}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", s.login(issuer))
	mux.Handle("/", prov)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(lis)
	t.Cleanup(func() { p.Stop() })
	return p
}

// Stop stops serving: the provider is down (an STS outage).
func (p *Provider) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// UserCookie is the cookie that names the logged-in user to the login page.
const UserCookie = "oidctest_user"

// Browser is an HTTP client that follows redirects and keeps cookies, as
// a browser does, and is logged in to the provider as user.
func (p *Provider) Browser(t testing.TB, user string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(p.Issuer)
	jar.SetCookies(u, []*http.Cookie{{Name: UserCookie, Value: user, Path: "/"}})
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// SetAccessTTL changes the lifetime of the access tokens issued from now
// on (client credentials and authorization code).
func (p *Provider) SetAccessTTL(d time.Duration) { p.store.accessTTL.Store(int64(d)) }

// Refreshes is how many refresh-token grants the provider answered.
func (p *Provider) Refreshes() int64 { return p.store.refreshes.Load() }

// CodeExchanges is how many authorization codes were exchanged for tokens.
func (p *Provider) CodeExchanges() int64 { return p.store.codeExchanges.Load() }

// SetExchangeTTL changes the lifetime of the tokens exchanged from now on.
func (p *Provider) SetExchangeTTL(d time.Duration) { p.store.exchangeTTL.Store(int64(d)) }

// Exchanges is how many token exchanges the provider answered with a token.
func (p *Provider) Exchanges() int64 { return p.store.exchanges.Load() }

// Token is a client-credentials access token (a JWT) for client, its
// "aud" the audiences.
func (p *Provider) Token(t testing.TB, client Client, audiences ...string) string {
	t.Helper()
	scopes := make([]string, 0, len(audiences))
	for _, a := range audiences {
		scopes = append(scopes, "aud:"+a)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	req, err := http.NewRequest(http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(client.ID), url.QueryEscape(client.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.AccessToken == "" {
		t.Fatalf("client credentials for %s: HTTP %d %s %s (%v)", client.ID, resp.StatusCode, a.Error, a.Description, err)
	}
	return a.AccessToken
}

// storage is op.Storage (with client credentials and token exchange) in
// memory.
type storage struct {
	opts      Options
	key       *ecdsa.PrivateKey
	kid       string
	clients   map[string]Client
	mu        sync.Mutex
	tokens    map[string]token
	exchanges atomic.Int64
	// exchangeTTL is the exchanged tokens' lifetime (SetExchangeTTL);
	// accessTTL the others' (SetAccessTTL).
	exchangeTTL, accessTTL atomic.Int64
	// The authorization-code flow's requests, codes and refresh tokens.
	authRequests  map[string]*authRequest
	codes         map[string]string
	refreshTokens map[string]refreshToken
	refreshes     atomic.Int64
	codeExchanges atomic.Int64
}

type token struct {
	subject  string
	audience []string
	expiry   time.Time
}

func newStorage(o Options) (*storage, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	thumb, err := (&jose.JSONWebKey{Key: key.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	s := &storage{opts: o, key: key, kid: base64.RawURLEncoding.EncodeToString(thumb), clients: map[string]Client{}, tokens: map[string]token{},
		authRequests: map[string]*authRequest{}, codes: map[string]string{}, refreshTokens: map[string]refreshToken{}}
	for _, c := range o.Clients {
		s.clients[c.ID] = c
	}
	if s.opts.AccessTTL == 0 {
		s.opts.AccessTTL = time.Hour
	}
	if s.opts.ExchangeTTL == 0 {
		s.opts.ExchangeTTL = time.Hour
	}
	s.exchangeTTL.Store(int64(s.opts.ExchangeTTL))
	s.accessTTL.Store(int64(s.opts.AccessTTL))
	return s, nil
}

var errUnsupported = errors.New("oidctest: not supported")

// Keys.

type signingKey struct{ s *storage }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return k.s.kid }

type publicKey struct{ s *storage }

func (k publicKey) ID() string                         { return k.s.kid }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.s.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s}, nil }
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}
func (s *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{s}}, nil }

// Clients.

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("unknown client")
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if c, ok := s.clients[id]; ok && c.Secret == secret {
		return nil
	}
	return errors.New("wrong client or secret")
}

func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return client{s.clients[id]}, nil
}

// ClientCredentialsTokenRequest makes the client the subject; "aud:X"
// scopes are the audiences.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	var aud []string
	for _, sc := range scopes {
		if a, ok := strings.CutPrefix(sc, "aud:"); ok {
			aud = append(aud, a)
		}
	}
	return &oidc.JWTTokenRequest{Subject: id, Audience: aud, Scopes: scopes}, nil
}

// Tokens.

func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	ttl := time.Duration(s.accessTTL.Load())
	if _, ok := r.(op.TokenExchangeRequest); ok {
		ttl = time.Duration(s.exchangeTTL.Load())
		s.exchanges.Add(1)
	}
	var id [12]byte
	rand.Read(id[:])
	tid := base64.RawURLEncoding.EncodeToString(id[:])
	exp := time.Now().Add(ttl)
	s.mu.Lock()
	s.tokens[tid] = token{subject: r.GetSubject(), audience: r.GetAudience(), expiry: exp}
	s.mu.Unlock()
	return tid, exp, nil
}

func (s *storage) roles(subject string) map[string]any {
	if c, ok := s.clients[subject]; ok && len(c.Roles) > 0 {
		return map[string]any{"roles": c.Roles}
	}
	return map[string]any{}
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, _ []string) (map[string]any, error) {
	return s.roles(userID), nil
}

// Token exchange: any valid access token of this provider is exchanged
// for one with the asked audience, the same subject and its roles.

func (s *storage) ValidateTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) error {
	if r.GetRequestedTokenType() == "" {
		r.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if r.GetRequestedTokenType() != oidc.AccessTokenType {
		return errors.New("only access tokens are issued")
	}
	if len(r.GetAudience()) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("name the audience")
	}
	return nil
}

func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) (map[string]any, error) {
	c := s.roles(r.GetSubject())
	c["exchanged_by"] = r.GetClientID()
	return c, nil
}

func (s *storage) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}

// What the op needs besides, none of which the tests use.

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }
func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrUnsupportedGrantType()
}
func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, tok string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt, ok := s.refreshTokens[tok]; ok {
		return rt.subject, tok, nil
	}
	return "", "", op.ErrInvalidRefreshToken
}

// SetUserinfoFromScopes gives the user's subject: the op copies the
// userinfo over the ID token's claims, so without it the ID token has no sub.
func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, userID, _ string, _ []string) error {
	info.Subject = userID
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return nil
}
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return nil
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}
func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}
func (s *storage) Health(context.Context) error { return nil }

// client is op.Client for a Client: a confidential client with the
// client-credentials and token-exchange grants and JWT access tokens.
type client struct{ c Client }

func (c client) GetID() string                       { return c.c.ID }
func (c client) RedirectURIs() []string              { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string    { return nil }
func (c client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c client) ResponseTypes() []oidc.ResponseType {
	if len(c.c.RedirectURIs) > 0 {
		return []oidc.ResponseType{oidc.ResponseTypeCode}
	}
	return nil
}
func (c client) GrantTypes() []oidc.GrantType {
	g := []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
	if len(c.c.RedirectURIs) > 0 {
		g = append(g, oidc.GrantTypeCode, oidc.GrantTypeRefreshToken)
	}
	return g
}
func (c client) LoginURL(id string) string            { return "/login?id=" + url.QueryEscape(id) }
func (c client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c client) DevMode() bool                        { return len(c.c.RedirectURIs) > 0 } // http redirect URIs on loopback
func (c client) IsScopeAllowed(string) bool           { return true }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return 0 }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

var _ op.Storage = (*storage)(nil)
var _ op.ClientCredentialsStorage = (*storage)(nil)
var _ op.TokenExchangeStorage = (*storage)(nil)

// String is for failure messages.
func (p *Provider) String() string { return fmt.Sprintf("oidctest provider at %s", p.Issuer) }
