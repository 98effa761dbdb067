package identity

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
	"github.com/flowdrop/gateway/server/pipeline"
)

// ConsentConfig is the user-consent mode's section (user_consent): the
// upstreams' OAuth clients, where the gateway's callback is, the key that
// seals the flow's state and the stored tokens, and the store's bounds.
type ConsentConfig struct {
	// RedirectURL is the gateway's callback as the browser reaches it
	// (https, or http on loopback), ending in CallbackPath; the start
	// endpoint is beside it (StartPath).
	RedirectURL string
	// KeyFiles are AES-256 keys (sealedstate's format): the first seals the
	// flow's state and every stored token, all of them open (rotation).
	KeyFiles []string
	// Clients are the upstreams' OAuth clients; a rule names one (Rule.Client).
	Clients []OAuthClient
	// StateTTL bounds an authorization link's and a flow's life (0:
	// DefaultConsentStateTTL).
	StateTTL time.Duration
	// RefreshBefore is how long before its expiry a stored token is
	// refreshed (0: DefaultConsentRefreshBefore; at most half its life).
	RefreshBefore time.Duration
	// MaxTokens bounds the stored (subject, client) pairs (0:
	// DefaultMaxConsentTokens): a new one beyond it is refused at the callback.
	MaxTokens int
	// Timeout bounds one request to an OAuth server (0: DefaultExchangeTimeout).
	Timeout time.Duration
	// BoltFile is the one-node store's file; Redis (the gateway's redis
	// section) is the fleet's. Exactly one.
	BoltFile string
	Redis    bool
	// VerifyCaller, when set, checks the person in the browser is the
	// link's subject before the upstream's authorization (consent_verify.go).
	VerifyCaller *VerifyCaller

	// Store is the opened store (the gateway sets it; nil: every call
	// fails closed). HTTPClient and Now are for tests.
	Store      TokenStore
	HTTPClient *http.Client
	Now        func() time.Time
}

// OAuthClient is the gateway's client at one upstream's authorization
// server: its endpoints (Issuer for OpenID discovery, or AuthURL and
// TokenURL), its id and secret (from a file), the scopes it asks for.
type OAuthClient struct {
	Name              string
	Issuer            string
	AuthURL, TokenURL string
	ClientID          string
	ClientSecretFile  string
	Scopes            []string
}

// Defaults of the user-consent mode.
const (
	DefaultConsentStateTTL      = 10 * time.Minute
	DefaultConsentRefreshBefore = time.Minute
	DefaultMaxConsentTokens     = 100000
	// maxConsentListed bounds one listing of the store.
	maxConsentListed = 100000
)

// The endpoints the gateway serves on its MCP listener for the flow.
const (
	ConsentPathPrefix = "/oauth/upstream/"
	StartPath         = ConsentPathPrefix + "start"
	CallbackPath      = ConsentPathPrefix + "callback"
)

// Purposes that bind sealed values to their use (sealedstate).
const (
	purposeStart = "user-consent-start/v1"
	purposeState = "user-consent-state/v1"
	purposeToken = "user-consent-token/v1"
)

// Consent is the user-consent mode: per-user tokens of upstreams' OAuth
// authorization servers, got by the authorization-code flow with PKCE
// (ServeHTTP), kept sealed in a TokenStore, refreshed before they expire.
type Consent struct {
	cfg     ConsentConfig
	keys    *sealedstate.Keyring
	clients map[string]*consentClient
	client  *http.Client
	now     func() time.Time
	flight  singleflight.Group
	vc      *callerVerifier // nil: the browser's person is not checked
}

type consentClient struct {
	OAuthClient
	secret string
	mu     sync.Mutex
	conf   *oauth2.Config // nil until its endpoints are known (discovery)
}

// checkConsent is what ConsentConfig is judged by without its files.
func checkConsent(c ConsentConfig) error {
	u, err := url.Parse(c.RedirectURL)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("redirect_url %q: not an absolute URL without query or fragment", policy.Bound(c.RedirectURL))
	case !secureOrLoopback(u):
		return errors.New("redirect_url: must be https (plain http only for loopback)")
	case !strings.HasSuffix(u.Path, CallbackPath):
		return fmt.Errorf("redirect_url: its path must end in %s (the gateway serves the callback there)", CallbackPath)
	case len(c.KeyFiles) == 0:
		return errors.New("key_files: list at least one AES-256 key file (the first seals the stored tokens)")
	case c.BoltFile == "" == !c.Redis:
		return errors.New("store: name exactly one: bolt_file (one node) or redis: true (the gateway's redis, a fleet)")
	case c.StateTTL < 0 || c.RefreshBefore < 0 || c.MaxTokens < 0 || c.Timeout < 0:
		return errors.New("state_ttl, refresh_before, max_tokens and timeout must not be negative")
	case len(c.Clients) == 0:
		return errors.New("clients: configure at least one upstream OAuth client")
	}
	if err := checkVerifyCaller(c.VerifyCaller); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, cl := range c.Clients {
		if !validClientName(cl.Name) || seen[cl.Name] {
			return fmt.Errorf("clients[%d].name %q: want a unique name of letters, digits, '-', '_' and '.'", i, policy.Bound(cl.Name))
		}
		seen[cl.Name] = true
		if cl.ClientID == "" || cl.ClientSecretFile == "" {
			return fmt.Errorf("clients[%d] (%s): client_id and client_secret_file are required", i, cl.Name)
		}
		if (cl.Issuer == "") == (cl.AuthURL == "" && cl.TokenURL == "") || (cl.Issuer == "" && (cl.AuthURL == "" || cl.TokenURL == "")) {
			return fmt.Errorf("clients[%d] (%s): give issuer (OpenID discovery) or both auth_url and token_url", i, cl.Name)
		}
		for _, s := range []string{cl.Issuer, cl.AuthURL, cl.TokenURL} {
			if s == "" {
				continue
			}
			if u, err := url.Parse(s); err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || !secureOrLoopback(u) {
				return fmt.Errorf("clients[%d] (%s): %q is not an https URL (plain http only for loopback)", i, cl.Name, policy.Bound(s))
			}
		}
	}
	return nil
}

func secureOrLoopback(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && loopback(u.Hostname()))
}

// NewConsent checks c and reads its key and client secret files.
func NewConsent(c ConsentConfig) (*Consent, error) {
	if err := checkConsent(c); err != nil {
		return nil, err
	}
	keys, err := sealedstate.Load(c.KeyFiles...)
	if err != nil {
		return nil, fmt.Errorf("key_files: %w", err)
	}
	if c.StateTTL == 0 {
		c.StateTTL = DefaultConsentStateTTL
	}
	if c.RefreshBefore == 0 {
		c.RefreshBefore = DefaultConsentRefreshBefore
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxConsentTokens
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultExchangeTimeout
	}
	k := &Consent{cfg: c, keys: keys, clients: map[string]*consentClient{}, client: c.HTTPClient, now: c.Now}
	if k.client == nil {
		// The client secret goes to the token URL only: no redirect is followed.
		k.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if k.now == nil {
		k.now = time.Now
	}
	for _, cl := range c.Clients {
		secret, err := readSecret(cl.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("clients (%s): %w", cl.Name, err)
		}
		cc := &consentClient{OAuthClient: cl, secret: secret}
		if cl.AuthURL != "" {
			cc.conf = k.oauthConfig(cc, cl.AuthURL, cl.TokenURL)
		}
		k.clients[cl.Name] = cc
	}
	if c.VerifyCaller != nil {
		if k.vc, err = newCallerVerifier(c, c.Timeout); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func (k *Consent) oauthConfig(cc *consentClient, authURL, tokenURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: cc.ClientID, ClientSecret: cc.secret, RedirectURL: k.cfg.RedirectURL, Scopes: slices.Clone(cc.Scopes),
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: oauth2.AuthStyleInHeader}}
}

// Store is the store the tokens are kept in (flowdropctl's list and revoke).
func (k *Consent) Store() TokenStore {
	if k == nil {
		return nil
	}
	return k.cfg.Store
}

// storedToken is what the store keeps of a token, sealed.
type storedToken struct {
	Access  string `json:"a"`
	Refresh string `json:"r,omitempty"`
	Expiry  int64  `json:"e,omitempty"` // Unix seconds; 0: none given
	// RefreshAt is when it is refreshed: RefreshBefore ahead of Expiry, at
	// most half its life (Unix seconds).
	RefreshAt int64 `json:"f,omitempty"`
}

// tokenPurpose binds a sealed token to its (subject, client): a row copied
// under another pair does not open.
func tokenPurpose(subject, client string) string {
	return purposeToken + "\x00" + client + "\x00" + subject
}

// Token is the caller's own token at client's authorization server: the
// stored one, refreshed first when it is within RefreshBefore of expiry.
// Without one (or when it lapsed and cannot be refreshed) the call is
// refused FailedPrecondition (identity-consent-required) naming the
// authorization URL; a store or OAuth server that cannot answer fails it
// closed (identity-unavailable). No error holds a token.
func (k *Consent) Token(ctx context.Context, caller policy.Caller, client, tool string) (string, error) {
	unavailable := func(cause error) error {
		return &pipeline.Error{Code: pipeline.Unavailable, Reason: pipeline.ReasonIdentityUnavailable, Tool: tool, Cause: cause,
			Message: fmt.Sprintf("tool %q: the gateway cannot reach the store or the authorization server of the caller's own token for this tool's upstream; try again later", tool)}
	}
	if k == nil {
		return "", unavailable(errors.New("no user_consent is configured"))
	}
	cc, ok := k.clients[client]
	if !ok {
		return "", &pipeline.Error{Code: pipeline.Internal, Reason: pipeline.ReasonInternal, Tool: tool,
			Cause:   fmt.Errorf("user-consent rule names OAuth client %q, which user_consent does not configure", client),
			Message: fmt.Sprintf("tool %q: the gateway's identity policy for its upstream is incomplete", tool)}
	}
	if caller.Subject == "" || strings.ContainsRune(caller.Subject, 0) || caller.Method == policy.MethodNone {
		return "", &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonIdentityRefused, Tool: tool,
			Message: fmt.Sprintf("tool %q: its upstream acts with each caller's own authorization, and this call has no authenticated subject to keep it for", tool)}
	}
	if k.cfg.Store == nil {
		return "", unavailable(errors.New("no user token store is open"))
	}
	st, err := k.load(ctx, caller.Subject, client)
	switch {
	case errors.Is(err, ErrNoToken):
		return "", k.consentRequired(caller.Subject, cc, tool)
	case err != nil:
		return "", unavailable(err)
	}
	now := k.now()
	if !k.due(st, now) {
		return st.Access, nil
	}
	// Refresh once per pair at a time; the others wait for its answer.
	// Like the exchange, it is not ended by the first caller's cancellation.
	v, err, _ := k.flight.Do(client+"\x00"+caller.Subject, func() (any, error) {
		cur, err := k.load(ctx, caller.Subject, client)
		if err != nil {
			return nil, err
		}
		if !k.due(cur, k.now()) {
			return cur, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.cfg.Timeout)
		defer cancel()
		return k.refresh(rctx, caller.Subject, cc, cur)
	})
	if err == nil {
		return v.(storedToken).Access, nil
	}
	var refused *refreshRefused
	switch {
	case errors.Is(err, ErrNoToken) || errors.As(err, &refused):
		return "", k.consentRequired(caller.Subject, cc, tool)
	case st.Expiry == 0 || now.Before(time.Unix(st.Expiry, 0)):
		// The authorization server is down but the token still holds:
		// sending it is no less safe than before the refresh was due.
		return st.Access, nil
	}
	return "", unavailable(err)
}

// due reports whether st is to be refreshed (or, without a refresh token,
// is past use) at now.
func (k *Consent) due(st storedToken, now time.Time) bool {
	if st.Expiry == 0 {
		return false // no lifetime given: used until the upstream refuses it
	}
	return !now.Before(time.Unix(st.RefreshAt, 0))
}

// load is the pair's token opened. A row that does not open (tampered,
// or sealed under a key no longer held) is as good as none.
func (k *Consent) load(ctx context.Context, subject, client string) (storedToken, error) {
	sealed, err := k.cfg.Store.Get(ctx, subject, client)
	if err != nil {
		return storedToken{}, err
	}
	plain, err := k.keys.Open(tokenPurpose(subject, client), string(sealed))
	if err != nil {
		return storedToken{}, ErrNoToken
	}
	var st storedToken
	if json.Unmarshal(plain, &st) != nil || st.Access == "" {
		return storedToken{}, ErrNoToken
	}
	return st, nil
}

// save seals and stores a token the authorization server issued.
func (k *Consent) save(ctx context.Context, subject, client string, t *oauth2.Token, prev storedToken) (storedToken, error) {
	st := storedToken{Access: t.AccessToken, Refresh: t.RefreshToken}
	if st.Refresh == "" {
		st.Refresh = prev.Refresh // RFC 6749 6: the server may keep the old one in force
	}
	if !t.Expiry.IsZero() {
		life := max(t.Expiry.Sub(k.now()), 0)
		st.Expiry = t.Expiry.Unix()
		st.RefreshAt = t.Expiry.Add(-min(k.cfg.RefreshBefore, life/2)).Unix()
	}
	plain, err := json.Marshal(st)
	if err != nil {
		return storedToken{}, err
	}
	return st, k.cfg.Store.Put(ctx, subject, client, []byte(k.keys.Seal(tokenPurpose(subject, client), plain)), k.cfg.MaxTokens)
}

// refreshRefused is the authorization server's refusal of a refresh: the
// consent is gone, and the stored token with it.
type refreshRefused struct{ msg string }

func (e *refreshRefused) Error() string { return "refresh refused: " + e.msg }

func (k *Consent) refresh(ctx context.Context, subject string, cc *consentClient, cur storedToken) (storedToken, error) {
	if cur.Refresh == "" {
		_, _ = k.cfg.Store.Delete(ctx, subject, cc.Name)
		return storedToken{}, &refreshRefused{msg: "no refresh token was issued"}
	}
	conf, err := k.endpoints(ctx, cc)
	if err != nil {
		return storedToken{}, err
	}
	t, err := conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, k.client), &oauth2.Token{RefreshToken: cur.Refresh}).Token()
	if err != nil {
		// invalid_grant (RFC 6749 5.2): the refresh token is expired or
		// revoked — the consent is gone. Any other refusal is the server's
		// or the client's configuration, which the person cannot fix.
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			_, _ = k.cfg.Store.Delete(ctx, subject, cc.Name)
			return storedToken{}, &refreshRefused{msg: oauthErrorText(err)}
		}
		return storedToken{}, errors.New("refresh failed: " + oauthErrorText(err))
	}
	if err := checkIssued(t); err != nil {
		return storedToken{}, err
	}
	return k.save(ctx, subject, cc.Name, t, cur)
}

// refusedByServer reports whether the authorization server judged the
// request (RFC 6749 5.2), as opposed to not answering it.
func refusedByServer(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.Response != nil && (re.Response.StatusCode == http.StatusBadRequest || re.Response.StatusCode == http.StatusUnauthorized)
}

// oauthErrorText is an OAuth failure without the server's body: its
// status and error code, or the transport's error.
func oauthErrorText(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := 0
		if re.Response != nil {
			code = re.Response.StatusCode
		}
		return fmt.Sprintf("HTTP %d, error %q", code, policy.Bound(errorCode(re.ErrorCode)))
	}
	return policy.Bound(err.Error())
}

// checkIssued refuses a token that cannot be sent as a bearer token.
func checkIssued(t *oauth2.Token) error {
	switch {
	case t.AccessToken == "":
		return errors.New("the authorization server issued no access_token")
	case t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer"):
		return fmt.Errorf("the authorization server issued a token of type %q, not a bearer token", policy.Bound(t.TokenType))
	case strings.ContainsAny(t.AccessToken, " \t\r\n"):
		return errors.New("the authorization server issued a token that is not a single header value")
	}
	return nil
}

// consentRequired is the refusal that tells the caller where to authorize.
func (k *Consent) consentRequired(subject string, cc *consentClient, tool string) error {
	u := k.StartURL(subject, cc.Name)
	return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonIdentityConsentRequired, Tool: tool, AuthorizationURL: u,
		Message: fmt.Sprintf("tool %q: its upstream acts with your own authorization, which the gateway does not hold (not given yet, lapsed or revoked): open %s in a browser to authorize, then call the tool again", tool, u)}
}

// startParams is what an authorization link carries, sealed.
type startParams struct {
	Subject string `json:"s"`
	Client  string `json:"c"`
	Expires int64  `json:"x"`
}

// StartURL is the link that starts subject's authorization at client:
// the gateway's start endpoint with the pair sealed and expiring.
func (k *Consent) StartURL(subject, client string) string {
	plain, _ := json.Marshal(startParams{Subject: subject, Client: client, Expires: k.now().Add(k.cfg.StateTTL).Unix()})
	return strings.TrimSuffix(k.cfg.RedirectURL, CallbackPath) + StartPath + "?s=" + k.keys.Seal(purposeStart, plain)
}

// endpoints is cc's oauth2 config, discovering its endpoints from its
// issuer the first time (bounded; a failure is tried again next time).
func (k *Consent) endpoints(ctx context.Context, cc *consentClient) (*oauth2.Config, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conf != nil {
		return cc.conf, nil
	}
	dctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(dctx, http.MethodGet, strings.TrimSuffix(cc.Issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, errors.New("discovery: building the request failed")
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, errors.New("discovery: the issuer is unreachable: " + policy.Bound(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSTSAnswer+1))
	if err != nil || resp.StatusCode != http.StatusOK || len(body) > maxSTSAnswer {
		return nil, fmt.Errorf("discovery: the issuer answered HTTP %d (or over %d bytes)", resp.StatusCode, maxSTSAnswer)
	}
	var d struct {
		Issuer   string `json:"issuer"`
		AuthURL  string `json:"authorization_endpoint"`
		TokenURL string `json:"token_endpoint"`
	}
	if json.Unmarshal(body, &d) != nil || d.Issuer != cc.Issuer {
		return nil, errors.New("discovery: the issuer's metadata is not JSON naming the configured issuer")
	}
	for _, s := range []string{d.AuthURL, d.TokenURL} {
		if u, err := url.Parse(s); err != nil || u.Host == "" || !secureOrLoopback(u) {
			return nil, errors.New("discovery: the issuer's endpoints are not https URLs")
		}
	}
	cc.conf = k.oauthConfig(cc, d.AuthURL, d.TokenURL)
	return cc.conf, nil
}

// readSecret is a client secret file's content, trimmed; errors name the
// file, never its content.
func readSecret(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("client_secret_file %s: cannot be read", policy.Bound(file))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("client_secret_file %s: is empty", policy.Bound(file))
	}
	return s, nil
}

// randomText is n random bytes as URL-safe base64.
func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
