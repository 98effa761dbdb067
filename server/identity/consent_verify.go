package identity

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/flowdrop/gateway/internal/policy"
)

// Verifying the browser's person (user_consent.verify_caller): without it
// whoever opens a link and logs in at the upstream binds their upstream
// account to the subject the link names. With it, start first sends the
// browser to the callers' own OpenID provider (authorization code, PKCE
// S256, an OIDC nonce, state sealed like the upstream flow's), and only an
// ID token verified by zitadel/oidc's relying party (signature against the
// provider's JWKS, iss, aud, exp, nonce) whose sub is the link's subject
// continues to the upstream's authorization.

// VerifyCaller is the gateway's OpenID client at the callers' identity
// provider: the one whose subjects the gateway's callers carry.
type VerifyCaller struct {
	Issuer           string
	ClientID         string
	ClientSecretFile string
	// Scopes default to [openid]; openid is always asked for.
	Scopes []string
}

// VerifyPath is the callback of the caller's login at its provider.
const VerifyPath = ConsentPathPrefix + "verify"

const (
	purposeVerify = "user-consent-verify/v1"
	verifyCookie  = "flowdrop_upstream_verify"
	// maxIdPAnswer bounds one answer of the callers' provider (discovery,
	// JWKS, token).
	maxIdPAnswer = 1 << 20
)

// verifyState is what the verification's `state` carries, sealed.
type verifyState struct {
	flowState
	IDNonce string `json:"i"` // the OIDC nonce the ID token must carry
}

var signInReturn = returnWords{
	stale:        "This sign-in is not one the gateway started, or it has expired. Call the tool again for a new link.",
	otherBrowser: "This sign-in was started in another browser; open the link from the tool's answer here.",
	notGranted:   "The sign-in was not completed (%s). Call the tool again to retry.",
	noCode:       "The identity provider sent no usable code.",
}

// callerVerifier makes the relying party at the callers' provider.
type callerVerifier struct {
	VerifyCaller
	secret, redirect string
	client           *http.Client
}

func checkVerifyCaller(v *VerifyCaller) error {
	if v == nil {
		return nil
	}
	if v.ClientID == "" || v.ClientSecretFile == "" {
		return errors.New("verify_caller: issuer, client_id and client_secret_file are required")
	}
	if u, err := url.Parse(v.Issuer); err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.RawQuery != "" || !secureOrLoopback(u) {
		return fmt.Errorf("verify_caller.issuer %q: not an https URL (plain http only for loopback)", policy.Bound(v.Issuer))
	}
	return nil
}

func newCallerVerifier(c ConsentConfig, timeout time.Duration) (*callerVerifier, error) {
	v := c.VerifyCaller
	secret, err := readSecret(v.ClientSecretFile)
	if err != nil {
		return nil, fmt.Errorf("verify_caller: %w", err)
	}
	cv := &callerVerifier{VerifyCaller: *v, secret: secret, redirect: strings.TrimSuffix(c.RedirectURL, CallbackPath) + VerifyPath}
	if !slices.Contains(cv.Scopes, oidc.ScopeOpenID) {
		cv.Scopes = append([]string{oidc.ScopeOpenID}, cv.Scopes...)
	}
	base := http.DefaultTransport
	if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
		base = c.HTTPClient.Transport
	}
	// No redirect is followed (the secret goes to the token URL only);
	// every answer is bounded in time and size.
	cv.client = &http.Client{Timeout: timeout, Transport: boundedTransport{base},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return cv, nil
}

// party is the relying party, the provider discovered afresh: a provider
// that is down is a 503 at start, not a redirect to nowhere. Only a link
// the gateway sealed reaches it, and a person follows a link once, so the
// discoveries are few.
func (cv *callerVerifier) party(ctx context.Context) (rp.RelyingParty, error) {
	ctx, cancel := context.WithTimeout(ctx, cv.client.Timeout)
	defer cancel()
	p, err := rp.NewRelyingPartyOIDC(ctx, cv.Issuer, cv.ClientID, cv.secret, cv.redirect, cv.Scopes,
		rp.WithHTTPClient(cv.client), rp.WithAuthStyle(oauth2.AuthStyleInHeader), rp.WithSigningAlgsFromDiscovery(),
		rp.WithVerifierOpts(rp.WithNonce(func(ctx context.Context) string { n, _ := ctx.Value(idNonceKey{}).(string); return n })))
	if err != nil {
		return nil, err
	}
	for _, s := range []string{p.OAuthConfig().Endpoint.AuthURL, p.OAuthConfig().Endpoint.TokenURL} {
		if u, err := url.Parse(s); err != nil || !secureOrLoopback(u) {
			return nil, errors.New("discovery: the provider's endpoints are not https URLs")
		}
	}
	return p, nil
}

// idNonceKey carries the expected OIDC nonce to the ID token's verifier.
type idNonceKey struct{}

// verifyStart sends the browser to the callers' provider for the link's subject.
func (k *Consent) verifyStart(w http.ResponseWriter, r *http.Request, sp startParams) {
	p, err := k.vc.party(r.Context())
	if err != nil {
		http.Error(w, "The identity provider that confirms who you are cannot be reached right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	nonce := randomText(32)
	vs := verifyState{flowState: flowState{Subject: sp.Subject, Client: sp.Client, Verifier: oauth2.GenerateVerifier(), Nonce: nonceHash(nonce),
		Expires: k.now().Add(k.cfg.StateTTL).Unix()}, IDNonce: randomText(32)}
	plain, _ := json.Marshal(vs)
	state := k.keys.Seal(purposeVerify, plain)
	http.SetCookie(w, &http.Cookie{Name: verifyCookie, Value: nonce, Path: ConsentPathPrefix, MaxAge: int(k.cfg.StateTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(k.cfg.RedirectURL, "https:"), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, p.OAuthConfig().AuthCodeURL(state, oauth2.S256ChallengeOption(vs.Verifier), oauth2.SetAuthURLParam("nonce", vs.IDNonce)), http.StatusFound)
}

// verifyCallback checks the person in the browser is the link's subject
// and only then continues to the upstream's authorization.
func (k *Consent) verifyCallback(w http.ResponseWriter, r *http.Request, log *slog.Logger) {
	if k.vc == nil {
		http.NotFound(w, r)
		return
	}
	var vs verifyState
	cc, code, ok := k.openReturn(w, r, purposeVerify, verifyCookie, &vs, &vs.flowState, signInReturn)
	if !ok {
		return
	}
	p, err := k.vc.party(r.Context())
	if err != nil {
		http.Error(w, "The identity provider that confirms who you are cannot be reached right now; try again later.", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), idNonceKey{}, vs.IDNonce), k.cfg.Timeout)
	defer cancel()
	toks, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, p, rp.WithCodeVerifier(vs.Verifier))
	if err == nil && (toks == nil || toks.IDTokenClaims == nil) {
		err = rp.ErrMissingIDToken
	}
	if err != nil {
		log.Warn("upstream authorization: the caller's sign-in did not verify", "client", vs.Client, "subject", policy.Bound(vs.Subject), "error", oauthErrorText(err))
		var ne net.Error
		if errors.As(err, &ne) {
			http.Error(w, "The identity provider that confirms who you are cannot be reached right now; try again later.", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "Your sign-in at the identity provider could not be verified. Call the tool again to retry.", http.StatusForbidden)
		return
	}
	if got := toks.IDTokenClaims.GetSubject(); subtle.ConstantTimeCompare([]byte(got), []byte(vs.Subject)) != 1 {
		log.Warn("upstream authorization refused: the browser's person is not the link's subject", "client", vs.Client,
			"subject", policy.Bound(vs.Subject), "signed_in", policy.Bound(got))
		http.Error(w, "You signed in as someone other than the caller this link was made for. Only that caller can authorize with it.", http.StatusForbidden)
		return
	}
	k.startUpstream(w, r, vs.Subject, vs.Client, cc)
}

// boundedTransport cuts every answer off at maxIdPAnswer bytes.
type boundedTransport struct{ rt http.RoundTripper }

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxIdPAnswer), resp.Body}
	}
	return resp, err
}

// VerifiesCaller reports whether the browser's person is checked against
// the link's subject (verify_caller is set).
func (k *Consent) VerifiesCaller() bool { return k != nil && k.vc != nil }

// NoVerifyCallerWarning is logged (start-up, check-config) when
// user_consent has no verify_caller.
const NoVerifyCallerWarning = "upstream_identity.user_consent has no verify_caller: whoever opens an authorization link and logs in at the upstream binds that upstream account to the link's subject; set verify_caller to check the person in the browser is the caller"
