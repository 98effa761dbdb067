package policy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Authentication methods a Caller can carry.
const (
	MethodAPIKey = "api-key"
	MethodJWT    = "jwt"
	MethodMTLS   = "mtls"
	MethodNone   = "none"
	// MethodInternal is the gateway itself, not a caller: the registry
	// writes it makes on its own (following an upstream MCP server).
	MethodInternal = "internal"
)

// Well-known roles.
const (
	// RoleAdmin may call ToolRegistryService (register, delete, read tools).
	RoleAdmin = "admin"
	// RoleInvoker may call ToolGatewayService (invoke tools) and read the registry.
	RoleInvoker = "invoker"
	// RoleViewer may read the admin console (server/console): the catalog,
	// pending changes, the audit tail, the policy and health, and try
	// arguments offline; it changes nothing and calls no tool (the
	// console's Invoke needs a role that grants InvokeTool as well), and
	// sees no backend address. It grants no gRPC method.
	RoleViewer = "viewer"
)

// Caller is an authenticated identity.
type Caller struct {
	// Subject: an API key's name, a JWT "sub", or a certificate's CN / URI SAN.
	Subject string
	// Method is one of MethodAPIKey, MethodJWT, MethodMTLS, MethodNone.
	Method string
	// Roles may be shared with the Authenticator and with other calls (it
	// returns its configured slice rather than a copy per call): read it,
	// never modify it; slices.Clone it first to build a different set.
	Roles []string
	// Token is the verified bearer token a JWT caller presented (nil for
	// every other method): what the passthrough and token-exchange
	// identity modes send on (server/identity). It never prints.
	Token *Bearer
}

// Bearer is a caller's verified bearer token with the claims the identity
// modes judge it by. Its formatting, logging and JSON forms are a
// placeholder, so a Caller printed or logged whole leaks nothing.
type Bearer struct {
	raw string
	// Audience is the token's "aud" (RFC 8707 resource indicators).
	Audience []string
	// Expiry is the token's "exp".
	Expiry time.Time
}

// NewBearer is a verified token's Bearer (authentication makes it; tests
// of the identity modes too).
func NewBearer(raw string, aud []string, exp time.Time) *Bearer {
	return &Bearer{raw: raw, Audience: aud, Expiry: exp}
}

// Raw is the token as the caller sent it, for the one place that sends it
// on (an upstream the policy says may have it).
func (b *Bearer) Raw() string {
	if b == nil {
		return ""
	}
	return b.raw
}

// Claim is the verified token's top-level string claim name, and whether
// it has one (what an alias injects). The payload is read when asked, not
// kept per call: only calls through such an alias pay for it, and the
// token was verified (and its size bounded) by authentication.
func (b *Bearer) Claim(name string) (string, bool) {
	if b == nil {
		return "", false
	}
	parts := strings.Split(b.raw, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", false
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil {
		return "", false
	}
	v, ok := claims[name].(string)
	return v, ok
}

const redactedBearer = "[bearer token]"

func (b *Bearer) String() string               { return redactedBearer }
func (b *Bearer) GoString() string             { return redactedBearer }
func (b *Bearer) LogValue() slog.Value         { return slog.StringValue(redactedBearer) }
func (b *Bearer) MarshalJSON() ([]byte, error) { return []byte(`"` + redactedBearer + `"`), nil }

// HasRole reports whether the caller holds role.
func (c Caller) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

type callerKey struct{}

// WithCaller returns a context carrying c, for the handlers after authentication.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller stored by WithCaller.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
