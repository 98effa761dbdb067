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
	Roles  []string
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
