package policy

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Bounds on what JWT discovery publishes: the document is served to anyone,
// so it stays small whatever the policy says.
const (
	maxAuthorizationServers = 16
	maxScopesSupported      = 64
	maxDiscoveryValueBytes  = 512
)

// JWTDiscovery is what the MCP face publishes as OAuth 2.0 Protected
// Resource Metadata (RFC 9728) when JWT authentication is on.
type JWTDiscovery struct {
	// Resource is the protected resource's URL (the MCP endpoint as clients
	// reach it); "" means the listener's own URL.
	Resource string
	// AuthorizationServers are the issuer identifiers of the authorization
	// servers that issue the tokens accepted here: by default the JWT
	// issuer, when it is an http(s) URL.
	AuthorizationServers []string
	// ScopesSupported, if any, are the scopes a client may request.
	ScopesSupported []string
}

// JWTDiscovery is the discovery metadata of JWT authentication, nil when
// JWT authentication is off (then nothing is published).
func (a *Authenticator) JWTDiscovery() *JWTDiscovery {
	if a == nil || a.jwt == nil {
		return nil
	}
	return a.jwt.discovery
}

// newJWTDiscovery checks and defaults the discovery fields of c.
func newJWTDiscovery(c JWTConfig) (*JWTDiscovery, error) {
	d := &JWTDiscovery{Resource: c.Resource, AuthorizationServers: slices.Clone(c.AuthorizationServers),
		ScopesSupported: slices.Clone(c.ScopesSupported)}
	if d.Resource != "" {
		if err := checkDiscoveryURL(d.Resource); err != nil {
			return nil, fmt.Errorf("auth: jwt.resource: %w", err)
		}
	}
	if len(d.AuthorizationServers) == 0 && checkDiscoveryURL(c.Issuer) == nil {
		// An issuer that is not a URL (allowed for verification) names no
		// server a client could ask: then none is published.
		d.AuthorizationServers = []string{c.Issuer}
	}
	if len(d.AuthorizationServers) > maxAuthorizationServers {
		return nil, fmt.Errorf("auth: jwt.authorization_servers: more than %d", maxAuthorizationServers)
	}
	for i, s := range d.AuthorizationServers {
		if err := checkDiscoveryURL(s); err != nil {
			return nil, fmt.Errorf("auth: jwt.authorization_servers[%d]: %w", i, err)
		}
	}
	if len(d.ScopesSupported) > maxScopesSupported {
		return nil, fmt.Errorf("auth: jwt.scopes_supported: more than %d", maxScopesSupported)
	}
	for i, s := range d.ScopesSupported {
		// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
		if s == "" || len(s) > maxDiscoveryValueBytes || strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' }) {
			return nil, fmt.Errorf("auth: jwt.scopes_supported[%d]: not an OAuth scope token", i)
		}
	}
	return d, nil
}

// checkDiscoveryURL accepts an absolute http(s) URL without a fragment or
// user info (RFC 9728 §1.2, RFC 8414 §2), of bounded length.
func checkDiscoveryURL(s string) error {
	if len(s) > maxDiscoveryValueBytes {
		return fmt.Errorf("longer than %d bytes", maxDiscoveryValueBytes)
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q is not an http(s) URL", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%q has a fragment", s)
	case u.User != nil:
		return fmt.Errorf("%q has user info", s)
	}
	return nil
}
