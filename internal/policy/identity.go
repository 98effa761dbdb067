package policy

import (
	"context"
	"slices"
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
}

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
