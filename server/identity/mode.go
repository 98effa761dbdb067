package identity

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Mode is how an upstream learns who is calling.
type Mode string

// The modes. A new one (say, per-user authorization-code tokens) is a
// constant here, a case in Resolve and in check.
const (
	Static        Mode = "static"
	Passthrough   Mode = "passthrough"
	GatewaySigned Mode = "gateway-signed"
	TokenExchange Mode = "token-exchange"
	// UserConsent sends the caller's own token at the upstream's OAuth
	// authorization server, got once by the authorization-code flow the
	// caller is sent through (consent.go).
	UserConsent Mode = "user-consent"
)

// Config is the policy file's upstream_identity section.
type Config struct {
	// Default is the mode of a call no rule matches ("": Static).
	Default Mode
	// Tools are per-tool rules (Match: a path.Match glob over tool names);
	// the first that matches wins, before any upstream rule.
	Tools []Rule
	// Upstreams are per-upstream rules (Match: an http(s) origin, for MCP
	// upstreams and HTTP operations, or a gRPC target as the tool names
	// it); the first that matches wins.
	Upstreams []Rule
	// Signing is the gateway-signed mode's issuer and keys.
	Signing *SigningConfig
	// Exchange is the token-exchange mode's security token service.
	Exchange *ExchangeConfig
	// Consent is the user-consent mode's OAuth clients and token store.
	Consent *ConsentConfig
}

// Rule is one mode choice.
type Rule struct {
	Match string
	Mode  Mode
	// Audience is the upstream's name in tokens (passthrough: what the
	// caller's "aud" must hold; gateway-signed: the minted "aud";
	// token-exchange: the audience and resource asked for). "": the
	// upstream's origin (http and https), else its gRPC target.
	Audience string
	// Client is the user-consent mode's OAuth client (ConsentConfig.Clients
	// by name); no other mode takes one.
	Client string
}

// Target is the call's backend as the resolver sees it.
type Target struct {
	Tool string
	// Upstream is the tool's URL (MCP upstream, HTTP operation) or gRPC target.
	Upstream string
	CallID   string
}

// Credential is the identity a call's backend is sent. Its token, when
// the mode has one, goes as "Authorization: Bearer" (HTTP, MCP) or the
// "authorization" metadata (gRPC); it never prints.
type Credential struct {
	Mode Mode
	// Subject is who the backend is told is calling (for the audit line).
	Subject string
	token   string
}

// Token is the bearer token to send ("" under static).
func (c Credential) Token() string { return c.token }

// String names the mode and subject, never the token.
func (c Credential) String() string { return string(c.Mode) + " " + c.Subject }

// GoString is String, so %#v cannot print the token either.
func (c Credential) GoString() string { return c.String() }

// Resolver resolves a call's Credential under a Config. Safe for
// concurrent use; a policy reload makes a new one.
type Resolver struct {
	def       Mode
	tools     []Rule
	upstreams []Rule
	signer    *Signer
	exchange  *Exchanger
	consent   *Consent
}

// New checks cfg and loads what its modes need (the signing keys, the
// client secret, from their files). Errors name the upstream_identity field.
func New(cfg Config) (*Resolver, error) {
	return build(cfg, true)
}

// Check is New without reading any file: what a policy file alone can
// be judged by (the files are read when the gateway starts or reloads).
func Check(cfg Config) error {
	_, err := build(cfg, false)
	return err
}

func build(cfg Config, load bool) (*Resolver, error) {
	r := &Resolver{def: cfg.Default, tools: slices.Clone(cfg.Tools), upstreams: slices.Clone(cfg.Upstreams)}
	if r.def == "" {
		r.def = Static
	}
	uses := map[Mode]bool{r.def: true}
	if err := check(r.def); err != nil {
		return nil, fmt.Errorf("upstream_identity.default: %w", err)
	}
	for i, t := range r.tools {
		if _, err := path.Match(t.Match, ""); err != nil || t.Match == "" {
			return nil, fmt.Errorf("upstream_identity.tools[%d].match %q: not a tool-name glob", i, policy.Bound(t.Match))
		}
		if err := check(t.Mode); err != nil {
			return nil, fmt.Errorf("upstream_identity.tools[%d].mode: %w", i, err)
		}
		if err := checkClient(t, cfg.Consent); err != nil {
			return nil, fmt.Errorf("upstream_identity.tools[%d].oauth_client: %w", i, err)
		}
		uses[t.Mode] = true
	}
	for i, u := range r.upstreams {
		if u.Match == "" {
			return nil, fmt.Errorf("upstream_identity.upstreams[%d].match: name an origin (scheme://host[:port]) or a gRPC target", i)
		}
		if o, err := policy.ParseOrigin(u.Match); err == nil {
			r.upstreams[i].Match = o
		}
		if err := check(u.Mode); err != nil {
			return nil, fmt.Errorf("upstream_identity.upstreams[%d].mode: %w", i, err)
		}
		if err := checkClient(u, cfg.Consent); err != nil {
			return nil, fmt.Errorf("upstream_identity.upstreams[%d].oauth_client: %w", i, err)
		}
		uses[u.Mode] = true
	}
	var err error
	switch {
	case uses[GatewaySigned] && cfg.Signing == nil:
		return nil, errors.New("upstream_identity.signing: the gateway-signed mode needs an issuer and key_files")
	case uses[TokenExchange] && cfg.Exchange == nil:
		return nil, errors.New("upstream_identity.token_exchange: the token-exchange mode needs a token_url and client")
	case r.def == UserConsent:
		return nil, errors.New("upstream_identity.default: user-consent names an OAuth client, so it is chosen per tool or upstream, not as the default")
	}
	if cfg.Consent != nil {
		if err := checkConsent(*cfg.Consent); err != nil {
			return nil, fmt.Errorf("upstream_identity.user_consent: %w", err)
		}
		if load {
			if r.consent, err = NewConsent(*cfg.Consent); err != nil {
				return nil, fmt.Errorf("upstream_identity.user_consent: %w", err)
			}
		}
	}
	if cfg.Signing != nil {
		if err := checkSigning(*cfg.Signing); err != nil {
			return nil, fmt.Errorf("upstream_identity.signing: %w", err)
		}
		if load {
			if r.signer, err = NewSigner(*cfg.Signing); err != nil {
				return nil, fmt.Errorf("upstream_identity.signing: %w", err)
			}
		}
	}
	if cfg.Exchange != nil {
		if err := checkExchange(*cfg.Exchange); err != nil {
			return nil, fmt.Errorf("upstream_identity.token_exchange: %w", err)
		}
		if load {
			if r.exchange, err = NewExchanger(*cfg.Exchange); err != nil {
				return nil, fmt.Errorf("upstream_identity.token_exchange: %w", err)
			}
		}
	}
	return r, nil
}

// check reports whether m is a mode this build knows.
func check(m Mode) error {
	switch m {
	case Static, Passthrough, GatewaySigned, TokenExchange, UserConsent:
		return nil
	}
	return fmt.Errorf("%q is not an identity mode (static, passthrough, gateway-signed, token-exchange, user-consent)", policy.Bound(string(m)))
}

// checkClient holds a rule's OAuth client to its mode: user-consent names
// one that user_consent configures, no other mode names any.
func checkClient(rl Rule, c *ConsentConfig) error {
	switch {
	case rl.Mode != UserConsent && rl.Client != "":
		return fmt.Errorf("only the user-consent mode takes an OAuth client (this rule's mode is %q)", policy.Bound(string(rl.Mode)))
	case rl.Mode != UserConsent:
		return nil
	case c == nil:
		return errors.New("the user-consent mode needs the user_consent section (its OAuth clients and token store)")
	}
	for _, cl := range c.Clients {
		if cl.Name == rl.Client {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of user_consent.clients", policy.Bound(rl.Client))
}

// Consent is the user-consent mode (nil when not configured): the
// gateway serves its endpoints and lists and revokes its tokens.
func (r *Resolver) Consent() *Consent {
	if r == nil {
		return nil
	}
	return r.consent
}

// Signer is the gateway-signed mode's signer (nil when not configured):
// the admin listener publishes its keys.
func (r *Resolver) Signer() *Signer {
	if r == nil {
		return nil
	}
	return r.signer
}

// rule is the mode, audience and OAuth client of t (ruleFor's).
func (r *Resolver) rule(t Target) (Mode, string, string) {
	rl := r.ruleFor(t)
	return rl.Mode, r.audience(rl, t), rl.Client
}

// ruleFor is the rule that applies to t: its tool's, else its upstream's,
// else the default (a rule with only the mode set). Its audience is left
// to audience, which only the modes that send one ask for: working it out
// parses the upstream's address, an allocation on every static call.
func (r *Resolver) ruleFor(t Target) Rule {
	for _, rl := range r.tools {
		if ok, _ := path.Match(rl.Match, t.Tool); ok {
			return rl
		}
	}
	if len(r.upstreams) > 0 {
		up := upstreamName(t.Upstream)
		for _, rl := range r.upstreams {
			if rl.Match == up {
				return rl
			}
		}
	}
	return Rule{Mode: r.def}
}

func (r *Resolver) audience(rl Rule, t Target) string {
	if rl.Audience != "" {
		return rl.Audience
	}
	return upstreamName(t.Upstream)
}

// upstreamName is an upstream URL's origin, or a gRPC target as written.
func upstreamName(up string) string {
	if o, err := policy.ParseURLOrigin(up); err == nil {
		return o
	}
	return up
}

// Mode is the mode the policy chooses for t (Static with no resolver),
// without making a credential: what the gateway's own requests to an
// upstream (federation, task follow-ups) are judged by.
func (r *Resolver) Mode(t Target) Mode {
	if r == nil {
		return Static
	}
	return r.ruleFor(t).Mode
}

// Resolve is the Credential the call's backend is sent under the mode the
// policy chooses for it. A mode it does not know, or one whose identity
// cannot be made, fails the call closed: the call is not sent.
func (r *Resolver) Resolve(ctx context.Context, caller policy.Caller, t Target) (Credential, error) {
	if r == nil {
		return Credential{Mode: Static, Subject: caller.Subject}, nil
	}
	rl := r.ruleFor(t)
	mode, client := rl.Mode, rl.Client
	switch mode {
	case Static:
		return Credential{Mode: Static, Subject: caller.Subject}, nil
	case Passthrough:
		return passthrough(caller, t, r.audience(rl, t))
	case GatewaySigned:
		tok, err := r.signer.Mint(caller, r.audience(rl, t), t.CallID, time.Now())
		if err != nil {
			return Credential{}, &pipeline.Error{Code: pipeline.Unavailable, Reason: pipeline.ReasonIdentityUnavailable, Tool: t.Tool, Cause: err,
				Message: fmt.Sprintf("tool %q: the gateway could not sign the identity its upstream requires", t.Tool)}
		}
		return Credential{Mode: GatewaySigned, Subject: caller.Subject, token: tok}, nil
	case TokenExchange:
		tok, err := r.exchange.Token(ctx, caller, r.audience(rl, t), t.Tool)
		if err != nil {
			return Credential{}, err
		}
		return Credential{Mode: TokenExchange, Subject: caller.Subject, token: tok}, nil
	case UserConsent:
		tok, err := r.consent.Token(ctx, caller, client, t.Tool)
		if err != nil {
			return Credential{}, err
		}
		return Credential{Mode: UserConsent, Subject: caller.Subject, token: tok}, nil
	}
	return Credential{}, &pipeline.Error{Code: pipeline.Internal, Reason: pipeline.ReasonInternal, Tool: t.Tool,
		Cause:   fmt.Errorf("identity mode %q has no case in Resolve", mode),
		Message: fmt.Sprintf("tool %q: the gateway does not know the identity mode its policy names", t.Tool)}
}

// passthrough is the caller's own token, when it names aud.
func passthrough(caller policy.Caller, t Target, aud string) (Credential, error) {
	if caller.Token == nil {
		return Credential{}, &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonIdentityAudience, Tool: t.Tool,
			Message: fmt.Sprintf("tool %q: its upstream takes the caller's own bearer token, and this call was not authenticated with one", t.Tool)}
	}
	if !slices.Contains(caller.Token.Audience, aud) {
		return Credential{}, &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonIdentityAudience, Tool: t.Tool,
			Message: fmt.Sprintf("tool %q: the caller's bearer token is not issued for this tool's upstream (its \"aud\" must name the upstream the policy sets, RFC 8707)", t.Tool)}
	}
	return Credential{Mode: Passthrough, Subject: caller.Subject, token: caller.Token.Raw()}, nil
}
