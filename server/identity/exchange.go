package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// ExchangeConfig is the token-exchange mode's security token service.
type ExchangeConfig struct {
	// TokenURL is the STS's token endpoint: https, or http on loopback.
	TokenURL string
	// ClientID and the file holding its secret authenticate the gateway
	// to the STS (HTTP Basic, RFC 6749 2.3.1).
	ClientID         string
	ClientSecretFile string
	// Timeout bounds one exchange (0: DefaultExchangeTimeout).
	Timeout time.Duration
	// MaxCached bounds the cached tokens, least recently used out first
	// (0: DefaultMaxCached).
	MaxCached int
	// RefreshBefore is how long before its expiry a cached token is
	// exchanged again (0: DefaultRefreshBefore; at most half its life).
	RefreshBefore time.Duration
	// HTTPClient is for tests (nil: a client that follows no redirect).
	HTTPClient *http.Client
	// Now is for tests (nil: time.Now).
	Now func() time.Time
}

// Defaults of the token-exchange mode.
const (
	DefaultExchangeTimeout = 5 * time.Second
	DefaultMaxCached       = 10000
	DefaultRefreshBefore   = 30 * time.Second
	// maxSTSAnswer bounds what is read of the STS's answer.
	maxSTSAnswer = 64 << 10
)

// RFC 8693 names.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// Exchanger exchanges callers' tokens at the STS (RFC 8693) and caches
// the results per (subject, audience): a bounded LRU, each entry until
// shortly before its token expires. Concurrent misses for one key make
// one exchange (singleflight).
type Exchanger struct {
	cfg    ExchangeConfig
	secret string
	client *http.Client
	now    func() time.Time
	cache  *lru.Cache[cacheKey, cached]
	flight singleflight.Group
	// exchanges counts the requests sent to the STS (tests, the status page).
	exchanges atomic.Int64
}

type cacheKey struct{ subject, audience string }

type cached struct {
	token     string
	refreshAt time.Time
}

// checkExchange is what ExchangeConfig is judged by without its file.
func checkExchange(c ExchangeConfig) error {
	u, err := url.Parse(c.TokenURL)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.Fragment != "":
		return fmt.Errorf("token_url %q: not an absolute URL", policy.Bound(c.TokenURL))
	case u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())):
		return fmt.Errorf("token_url: must be https (plain http only for loopback), got scheme %q", policy.Bound(u.Scheme))
	case c.ClientID == "" || c.ClientSecretFile == "":
		return errors.New("client_id and client_secret_file: the gateway authenticates to the STS as a client")
	case c.Timeout < 0 || c.MaxCached < 0 || c.RefreshBefore < 0:
		return errors.New("timeout, max_cached and refresh_before must not be negative")
	}
	return nil
}

// NewExchanger checks c and reads the client secret.
func NewExchanger(c ExchangeConfig) (*Exchanger, error) {
	if err := checkExchange(c); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(c.ClientSecretFile)
	if err != nil {
		return nil, fmt.Errorf("client_secret_file %s: cannot be read", policy.Bound(c.ClientSecretFile))
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return nil, fmt.Errorf("client_secret_file %s: is empty", policy.Bound(c.ClientSecretFile))
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultExchangeTimeout
	}
	if c.MaxCached == 0 {
		c.MaxCached = DefaultMaxCached
	}
	if c.RefreshBefore == 0 {
		c.RefreshBefore = DefaultRefreshBefore
	}
	e := &Exchanger{cfg: c, secret: secret, client: c.HTTPClient, now: c.Now}
	if e.client == nil {
		// The client secret and the caller's token go to the token URL
		// only: no redirect is followed.
		e.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.cache, err = lru.New[cacheKey, cached](c.MaxCached); err != nil {
		return nil, err
	}
	return e, nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Exchanges is how many exchanges were sent to the STS.
func (e *Exchanger) Exchanges() int64 { return e.exchanges.Load() }

// Token is the caller's token exchanged for audience: cached, or made now.
// Its errors are *pipeline.Error naming tool: PermissionDenied
// (identity-refused) when the STS refused, Unavailable
// (identity-unavailable) when it could not answer; never the token or the
// STS's answer, which are in no error at all (the Cause has the status).
func (e *Exchanger) Token(ctx context.Context, caller policy.Caller, audience, tool string) (string, error) {
	if e == nil {
		return "", &pipeline.Error{Code: pipeline.Unavailable, Reason: pipeline.ReasonIdentityUnavailable, Tool: tool,
			Cause: errors.New("no token_exchange is configured"), Message: unavailableMessage(tool)}
	}
	if caller.Token == nil {
		return "", &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonIdentityRefused, Tool: tool,
			Message: fmt.Sprintf("tool %q: its upstream takes an exchange of the caller's bearer token, and this call was not authenticated with one", tool)}
	}
	k := cacheKey{caller.Subject, audience}
	if c, ok := e.cache.Get(k); ok && e.now().Before(c.refreshAt) {
		return c.token, nil
	}
	// One exchange per key at a time; the others wait for its answer. The
	// exchange is not ended by the first caller's cancellation (the
	// waiters share it), only by the timeout.
	v, err, _ := e.flight.Do(k.subject+"\x00"+k.audience, func() (any, error) {
		if c, ok := e.cache.Get(k); ok && e.now().Before(c.refreshAt) {
			return c.token, nil
		}
		xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Timeout)
		defer cancel()
		return e.exchange(xctx, caller.Token.Raw(), k)
	})
	if err != nil {
		var x *exchangeError
		if errors.As(err, &x) && x.refused {
			return "", &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonIdentityRefused, Tool: tool, Cause: err,
				Message: fmt.Sprintf("tool %q: the security token service refused to issue the caller a token for this tool's upstream", tool)}
		}
		return "", &pipeline.Error{Code: pipeline.Unavailable, Reason: pipeline.ReasonIdentityUnavailable, Tool: tool, Cause: err,
			Message: unavailableMessage(tool)}
	}
	return v.(string), nil
}

func unavailableMessage(tool string) string {
	return fmt.Sprintf("tool %q: the security token service did not answer the exchange its upstream requires; try again later", tool)
}

// exchangeError is a failed exchange: refused (the STS said no) or not.
// Its text has the STS's status and error code, never its body otherwise.
type exchangeError struct {
	refused bool
	msg     string
}

func (e *exchangeError) Error() string { return "token exchange: " + e.msg }

// tokenAnswer is the STS's answer (RFC 8693 2.2.1).
type tokenAnswer struct {
	AccessToken     string          `json:"access_token"`
	IssuedTokenType string          `json:"issued_token_type"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	Error           string          `json:"error"`
}

// exchange sends one exchange and caches its answer.
func (e *Exchanger) exchange(ctx context.Context, subjectToken string, k cacheKey) (string, error) {
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subjectToken},
		"subject_token_type":   {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess},
		"audience":             {k.audience},
	}
	if u, err := url.Parse(k.audience); err == nil && u.IsAbs() && u.Fragment == "" {
		form.Set("resource", k.audience) // RFC 8707: an absolute URI only
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", &exchangeError{msg: "building the request failed"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(e.cfg.ClientID), url.QueryEscape(e.secret))
	e.exchanges.Add(1)
	sent := e.now()
	resp, err := e.client.Do(req)
	if err != nil {
		// The transport's error names the URL (the operator's), never the form.
		return "", &exchangeError{msg: "the STS is unreachable: " + policy.Bound(err.Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSTSAnswer+1))
	if err != nil || len(body) > maxSTSAnswer {
		return "", &exchangeError{msg: fmt.Sprintf("the STS's answer (HTTP %d) could not be read within %d bytes", resp.StatusCode, maxSTSAnswer)}
	}
	var a tokenAnswer
	jsonErr := json.Unmarshal(body, &a)
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// RFC 6749 5.2: the STS judged the request (invalid_grant,
		// invalid_target, unauthorized_client...): the call is refused.
		return "", &exchangeError{refused: true, msg: fmt.Sprintf("the STS refused (HTTP %d, error %q)", resp.StatusCode, policy.Bound(errorCode(a.Error)))}
	case resp.StatusCode != http.StatusOK:
		return "", &exchangeError{msg: fmt.Sprintf("the STS answered HTTP %d", resp.StatusCode)}
	case jsonErr != nil || a.AccessToken == "":
		return "", &exchangeError{msg: "the STS's answer has no access_token"}
	case !strings.EqualFold(a.TokenType, "bearer") && !strings.EqualFold(a.TokenType, "N_A"):
		return "", &exchangeError{msg: fmt.Sprintf("the STS issued a token of type %q, not a bearer token", policy.Bound(a.TokenType))}
	case strings.ContainsAny(a.AccessToken, " \t\r\n"):
		return "", &exchangeError{msg: "the STS issued a token that is not a single header value"}
	}
	if life, ok := expiresIn(a.ExpiresIn); ok {
		margin := min(e.cfg.RefreshBefore, life/2)
		e.cache.Add(k, cached{token: a.AccessToken, refreshAt: sent.Add(life - margin)})
	} // else: no lifetime to trust, so not cached
	return a.AccessToken, nil
}

// errorCode is an RFC 6749 error code as sent, or "" when it is not one
// (a code is printable ASCII without '"' and '\').
func errorCode(s string) string {
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return ""
		}
	}
	return s
}

// expiresIn is a positive expires_in (a JSON number, or a string of one).
func expiresIn(raw json.RawMessage) (time.Duration, bool) {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/time.Second) {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}
