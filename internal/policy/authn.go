package policy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// Authentication modes. There is no default: turning authentication off must
// be written down, and Authenticator.Off lets the server warn at start-up.
const (
	AuthOff = "off"
	AuthOn  = "on"
)

// DefaultJWTAlgorithms are the asymmetric algorithms accepted by default.
// "none" and the HMAC family are never accepted: with keys from a JWKS, HS256
// would let a public key be used as an HMAC secret (algorithm confusion).
var DefaultJWTAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// AuthConfig configures an Authenticator.
type AuthConfig struct {
	// Mode is AuthOn or AuthOff; anything else (including "") is a config error.
	Mode string
	// AnonymousRoles are the roles of every caller when Mode is AuthOff
	// (nil means admin and invoker: off is for local development).
	AnonymousRoles []string
	APIKeys        []APIKey
	JWT            *JWTConfig
	MTLS           *MTLSConfig
}

// APIKey is one accepted API key. Only its SHA-256 is configured.
type APIKey struct {
	// Name becomes Caller.Subject.
	Name string
	// SHA256 is the hex SHA-256 of the key, optionally prefixed "sha256:".
	SHA256 string
	Roles  []string
}

// JWTConfig configures bearer-token authentication.
type JWTConfig struct {
	Issuer   string // required: the "iss" every token must carry
	Audience string // required: a value the token's "aud" must contain
	// Exactly one of JWKSFile and JWKSURL. A URL must be https unless its host is loopback.
	JWKSFile string
	JWKSURL  string
	// RoleClaim names the claim holding roles: an array of strings or a
	// space-separated string. Default "roles".
	RoleClaim string
	// Leeway tolerates clock skew on exp/nbf/iat.
	Leeway time.Duration
	// Algorithms accepted; default DefaultJWTAlgorithms. HS* and "none" are rejected at load.
	Algorithms []string
	// FetchTimeout bounds one JWKS fetch (default 10s); RefreshInterval is
	// how often the JWKS is refetched (default 1h). Unknown key ids also
	// trigger a (rate-limited) refetch, so key rotation needs no restart.
	FetchTimeout    time.Duration
	RefreshInterval time.Duration
	// HTTPClient for the JWKS URL; nil uses a default client.
	HTTPClient *http.Client
	// Resource, AuthorizationServers and ScopesSupported are published to
	// MCP clients as Protected Resource Metadata (resource_metadata.go);
	// they do not change what a token must carry.
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
}

// MTLSConfig configures client-certificate authentication. Certificates are
// verified by the TLS layer (the server must require and verify client
// certificates); the authenticator only maps the verified leaf to a Caller.
type MTLSConfig struct {
	// SubjectFrom is "cn" (subject common name) or "san-uri" (first URI SAN, e.g. a SPIFFE ID).
	SubjectFrom string
	// Roles maps a subject to its roles; subjects not listed get DefaultRoles.
	Roles        map[string][]string
	DefaultRoles []string
}

// Credentials are what a transport extracted from a request.
type Credentials struct {
	// Bearer is the token from "authorization: bearer …".
	Bearer string
	// APIKey is the value of the "x-api-key" header.
	APIKey string
	// PeerCerts is the client's VERIFIED chain, leaf first. Transports must not
	// pass certificates the TLS handshake did not verify.
	PeerCerts []*x509.Certificate
}

// Authenticator turns Credentials into a Caller.
type Authenticator struct {
	off       bool
	anonRoles []string
	keys      []apiKey
	jwt       *jwtAuth
	mtls      *MTLSConfig
	cancel    context.CancelFunc
}

type apiKey struct {
	name  string
	sum   [sha256.Size]byte
	roles []string
}

type jwtAuth struct {
	parser *jwt.Parser
	// validator checks the claims as parser does, for Screen's tokens
	// whose signature cannot be checked without a fetch.
	validator *jwt.Validator
	keys      keyfunc.Keyfunc
	roleClaim string
	algs      []string
	discovery *JWTDiscovery
}

// NewAuthenticator validates cfg and builds an Authenticator. ctx bounds the
// initial JWKS fetch and the background refresh; Close stops the refresh.
func NewAuthenticator(ctx context.Context, cfg AuthConfig) (*Authenticator, error) {
	switch cfg.Mode {
	case AuthOff:
		roles := cfg.AnonymousRoles
		if roles == nil {
			roles = []string{RoleAdmin, RoleInvoker}
		}
		return &Authenticator{off: true, anonRoles: slices.Clone(roles)}, nil
	case AuthOn:
	case "":
		return nil, errors.New("auth: mode must be set explicitly to \"on\" or \"off\"")
	default:
		return nil, fmt.Errorf("auth: mode %q is not \"on\" or \"off\"", cfg.Mode)
	}
	if len(cfg.APIKeys) == 0 && cfg.JWT == nil && cfg.MTLS == nil {
		return nil, errors.New("auth: mode \"on\" needs at least one of api_keys, jwt, mtls")
	}
	a := &Authenticator{}
	seen := map[string]bool{}
	for i, k := range cfg.APIKeys {
		if k.Name == "" {
			return nil, fmt.Errorf("auth: api_keys[%d]: name is empty", i)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("auth: api_keys[%d]: duplicate name %q", i, k.Name)
		}
		seen[k.Name] = true
		h := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(k.SHA256)), "sha256:")
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("auth: api key %q: sha256 must be 64 hex digits (optionally prefixed \"sha256:\")", k.Name)
		}
		ak := apiKey{name: k.Name, roles: slices.Clone(k.Roles)}
		copy(ak.sum[:], b)
		a.keys = append(a.keys, ak)
	}
	if cfg.MTLS != nil {
		switch cfg.MTLS.SubjectFrom {
		case "cn", "san-uri":
		default:
			return nil, fmt.Errorf("auth: mtls.subject_from %q is not \"cn\" or \"san-uri\"", cfg.MTLS.SubjectFrom)
		}
		m := *cfg.MTLS
		a.mtls = &m
	}
	if cfg.JWT != nil {
		rctx, cancel := context.WithCancel(ctx)
		j, err := newJWTAuth(rctx, *cfg.JWT)
		if err != nil {
			cancel()
			return nil, err
		}
		a.jwt, a.cancel = j, cancel
	}
	return a, nil
}

// HashAPIKey returns the "sha256:<hex>" form to put in configuration for key.
func HashAPIKey(key string) string {
	s := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(s[:])
}

// Off reports that authentication is disabled (the server should warn).
func (a *Authenticator) Off() bool { return a.off }

// AcceptedHTTP says, for a refused HTTP client, which credentials the
// policy accepts and how to send them ("" when authentication is off), so
// a client configured for one kind does not guess another (e.g. start an
// interactive OAuth flow on a gateway that takes API keys). It names kinds
// and headers only, never a key's name.
func (a *Authenticator) AcceptedHTTP() string {
	if a == nil || a.off {
		return ""
	}
	var kinds []string
	if len(a.keys) > 0 {
		kinds = append(kinds, "an API key in X-API-Key or Authorization: Bearer")
	}
	if a.jwt != nil {
		kinds = append(kinds, "a JWT in Authorization: Bearer")
	}
	if a.mtls != nil {
		kinds = append(kinds, "a TLS client certificate")
	}
	return "accepted credentials: " + strings.Join(kinds, "; ")
}

// AcceptsAPIKeys reports that API keys authenticate callers.
func (a *Authenticator) AcceptsAPIKeys() bool { return a != nil && !a.off && len(a.keys) > 0 }

// Close stops the JWKS refresh, if any.
func (a *Authenticator) Close() {
	if a.cancel != nil {
		a.cancel()
	}
}

// Authenticate identifies the caller. Precedence: an API key header, then a
// bearer token (an API key when it is one of the configured keys, else a
// JWT when JWT is configured), then a verified client certificate. A
// credential that is present but invalid is refused; it never falls
// through to a weaker one.
func (a *Authenticator) Authenticate(ctx context.Context, c Credentials) (Caller, error) {
	if a.off {
		// Shared, not cloned: Roles is read-only (Caller), and this runs on
		// every call with authentication off.
		return Caller{Subject: "anonymous", Method: MethodNone, Roles: a.anonRoles}, nil
	}
	switch {
	case c.APIKey != "":
		return a.apiKey(c.APIKey)
	case c.Bearer != "" && a.jwt != nil:
		// docs/agents.md promises "Bearer <api key or JWT>": the key lookup is
		// constant-time over every key, so trying it first reveals nothing.
		if caller, ok := a.lookupKey(c.Bearer); ok {
			return caller, nil
		}
		return a.bearerJWTError(a.jwt.authenticate(ctx, c.Bearer))
	case c.Bearer != "":
		return a.apiKey(c.Bearer)
	case len(c.PeerCerts) > 0 && a.mtls != nil:
		return a.cert(c.PeerCerts[0])
	}
	return Caller{}, unauthenticated(ReasonCredentialsMissing, "no credentials: send an API key (x-api-key), a bearer token, or a client certificate")
}

// bearerJWTError says, when API keys are configured too, that a malformed
// bearer token is not a key either.
func (a *Authenticator) bearerJWTError(caller Caller, err error) (Caller, error) {
	if pe, ok := AsError(err); ok && pe.Reason == ReasonJWTMalformed && len(a.keys) > 0 {
		pe.Message = "bearer token is neither a recognised API key nor a well-formed JWT"
	}
	return caller, err
}

func (a *Authenticator) apiKey(key string) (Caller, error) {
	if len(a.keys) == 0 {
		return Caller{}, unauthenticated(ReasonAuthMethodDisabled, "API key authentication is not enabled")
	}
	if caller, ok := a.lookupKey(key); ok {
		return caller, nil
	}
	return Caller{}, unauthenticated(ReasonAPIKeyUnknown, "API key not recognised")
}

// lookupKey finds the configured key whose hash is key's.
func (a *Authenticator) lookupKey(key string) (Caller, bool) {
	sum := sha256.Sum256([]byte(key))
	// Compare against every key without stopping early, so timing does not
	// reveal which (or whether a) configured hash shares a prefix.
	match := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(sum[:], a.keys[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return Caller{}, false
	}
	k := a.keys[match]
	return Caller{Subject: k.name, Method: MethodAPIKey, Roles: k.roles}, true // shared: Roles is read-only
}

func (a *Authenticator) cert(leaf *x509.Certificate) (Caller, error) {
	var subject string
	switch a.mtls.SubjectFrom {
	case "cn":
		subject = leaf.Subject.CommonName
	case "san-uri":
		if len(leaf.URIs) > 0 {
			subject = leaf.URIs[0].String()
		}
	}
	if subject == "" {
		return Caller{}, unauthenticated(ReasonMTLSSubject, "client certificate has no "+a.mtls.SubjectFrom+" to identify the caller")
	}
	roles, ok := a.mtls.Roles[subject]
	if !ok {
		roles = a.mtls.DefaultRoles
	}
	return Caller{Subject: subject, Method: MethodMTLS, Roles: slices.Clone(roles)}, nil
}

func newJWTAuth(ctx context.Context, c JWTConfig) (*jwtAuth, error) {
	if c.Issuer == "" || c.Audience == "" {
		return nil, errors.New("auth: jwt.issuer and jwt.audience are both required")
	}
	algs := c.Algorithms
	if len(algs) == 0 {
		algs = DefaultJWTAlgorithms
	}
	for _, alg := range algs {
		m := jwt.GetSigningMethod(alg)
		switch m.(type) {
		case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS, *jwt.SigningMethodECDSA, *jwt.SigningMethodEd25519:
		default:
			return nil, fmt.Errorf("auth: jwt algorithm %q is not an accepted asymmetric algorithm", alg)
		}
	}
	discovery, err := newJWTDiscovery(c)
	if err != nil {
		return nil, err
	}
	if (c.JWKSFile == "") == (c.JWKSURL == "") {
		return nil, errors.New("auth: exactly one of jwt.jwks_file and jwt.jwks_url is required")
	}
	var kf keyfunc.Keyfunc
	if c.JWKSFile != "" {
		raw, err := os.ReadFile(c.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("auth: jwt.jwks_file: %w", err)
		}
		kf, err = keyfunc.NewJWKSetJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("auth: jwt.jwks_file %s: not a valid JWK Set: %w", c.JWKSFile, err)
		}
	} else {
		if err := checkJWKSURL(c.JWKSURL); err != nil {
			return nil, err
		}
		timeout := c.FetchTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		no := false // fail at start-up rather than run with no keys
		var err error
		kf, err = keyfunc.NewDefaultOverrideCtx(ctx, []string{c.JWKSURL}, keyfunc.Override{
			Client:                    c.HTTPClient,
			HTTPTimeout:               timeout,
			RefreshInterval:           c.RefreshInterval,
			NoErrorReturnFirstHTTPReq: &no,
			// An unknown kid triggers at most one refetch per 5 minutes. jwkset
			// uses this bound for both the rate-limiter wait and the refetch
			// itself; a wait longer than it fails at once, so a call with an
			// unknown kid is delayed by at most one FetchTimeout.
			RateLimitWaitMax: timeout,
		})
		if err != nil {
			return nil, fmt.Errorf("auth: jwt.jwks_url: fetching the JWK Set failed: %w", err)
		}
	}
	role := c.RoleClaim
	if role == "" {
		role = "roles"
	}
	claimChecks := []jwt.ParserOption{
		jwt.WithIssuer(c.Issuer),
		jwt.WithAudience(c.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(c.Leeway),
	}
	p := jwt.NewParser(append(slices.Clone(claimChecks), jwt.WithValidMethods(algs))...)
	return &jwtAuth{parser: p, validator: jwt.NewValidator(claimChecks...), keys: kf, roleClaim: role,
		algs: slices.Clone(algs), discovery: discovery}, nil
}

func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("auth: jwt.jwks_url %q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("auth: jwt.jwks_url must be https (plain http only for loopback), got scheme %q", u.Scheme)
}

func (j *jwtAuth) authenticate(ctx context.Context, raw string) (Caller, error) {
	claims := jwt.MapClaims{}
	// The call's context bounds an unknown-kid refetch, so a cancelled call stops waiting.
	tok, err := j.parser.ParseWithClaims(raw, claims, j.keys.KeyfuncCtx(ctx))
	if err != nil {
		return Caller{}, j.classify(tok, err)
	}
	c, err := j.caller(claims)
	if err != nil {
		return c, err
	}
	c.Token = bearerOf(raw, claims)
	return c, nil
}

// bearerOf is a verified token's Bearer.
func bearerOf(raw string, claims jwt.MapClaims) *Bearer {
	aud, _ := claims.GetAudience()
	var exp time.Time
	if e, _ := claims.GetExpirationTime(); e != nil {
		exp = e.Time
	}
	return NewBearer(raw, aud, exp)
}

// caller is the Caller a verified token's claims name.
func (j *jwtAuth) caller(claims jwt.MapClaims) (Caller, error) {
	sub, _ := claims.GetSubject()
	if sub == "" {
		return Caller{}, unauthenticated(ReasonJWTClaims, "bearer token has no \"sub\" claim")
	}
	roles, ok := rolesFromClaim(claims[j.roleClaim])
	if !ok {
		return Caller{}, unauthenticated(ReasonJWTClaims, fmt.Sprintf("bearer token claim %q must be a string or an array of strings", j.roleClaim))
	}
	return Caller{Subject: sub, Method: MethodJWT, Roles: roles}, nil
}

// classify maps a jwt/v5 error to a stable reason. Messages are our own: the
// token and its claims are never echoed.
func (j *jwtAuth) classify(tok *jwt.Token, err error) *Error {
	if errors.Is(err, jwt.ErrTokenMalformed) {
		return unauthenticated(ReasonJWTMalformed, "bearer token is not a well-formed JWT")
	}
	if tok != nil {
		if alg, _ := tok.Header["alg"].(string); !slices.Contains(j.algs, alg) {
			return unauthenticated(ReasonJWTAlgorithm, "bearer token signing algorithm is not accepted (accepted: "+strings.Join(j.algs, ", ")+")")
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return unauthenticated(ReasonJWTKeyUnknown, "bearer token is signed with a key not in the JWK Set")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return unauthenticated(ReasonJWTSignature, "bearer token signature is invalid")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated(ReasonJWTExpired, "bearer token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthenticated(ReasonJWTNotYetValid, "bearer token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthenticated(ReasonJWTIssuer, "bearer token issuer is not the configured issuer")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthenticated(ReasonJWTAudience, "bearer token audience does not include this gateway")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return unauthenticated(ReasonJWTClaims, "bearer token lacks a required claim (exp, iss, aud)")
	}
	return unauthenticated(ReasonJWTClaims, "bearer token claims are invalid")
}

func rolesFromClaim(v any) ([]string, bool) {
	switch r := v.(type) {
	case nil:
		return nil, true
	case string:
		return strings.Fields(r), true
	case []any:
		out := make([]string, 0, len(r))
		for _, e := range r {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
