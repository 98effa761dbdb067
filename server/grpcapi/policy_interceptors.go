package grpcapi

import (
	"context"
	"log/slog"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// This file adapts the transport-neutral policy package to gRPC. The chain
// (chain.go) decides where each interceptor goes; these are only constructors.

// apiKeyHeader carries an API key; "authorization: bearer …" carries a JWT.
const apiKeyHeader = "x-api-key"

type policyOptions struct {
	match selector.Matcher
}

// policyOption configures the policy interceptor constructors.
type policyOption func(*policyOptions)

// withPolicyMatcher limits an interceptor to the calls m matches (for
// example everything except health and reflection). Default: all calls,
// without a selector (chain.go puts one selector around the whole group).
func withPolicyMatcher(m selector.Matcher) policyOption {
	return func(o *policyOptions) { o.match = m }
}

func applyPolicyOptions(opts []policyOption) policyOptions {
	var o policyOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// unary and stream wrap an interceptor in the matcher's selector, if any.
func (o policyOptions) unary(i grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	if o.match == nil {
		return i
	}
	return selector.UnaryServerInterceptor(i, o.match)
}

func (o policyOptions) stream(i grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	if o.match == nil {
		return i
	}
	return selector.StreamServerInterceptor(i, o.match)
}

// newAuthInterceptor authenticates each call with a and stores the
// policy.Caller in the context (policy.CallerFrom). Refusals are
// Unauthenticated with an ErrorInfo reason; nothing echoes a credential.
func newAuthInterceptor(a *policy.Authenticator, opts ...policyOption) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return newAuthInterceptorFrom(func(context.Context) *policy.Authenticator { return a }, opts...)
}

// newAuthInterceptorFrom is newAuthInterceptor with the Authenticator
// looked up per call (the call's policy snapshot: a reload swaps it).
func newAuthInterceptorFrom(authOf func(context.Context) *policy.Authenticator, opts ...policyOption) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	o := applyPolicyOptions(opts)
	fn := func(ctx context.Context) (context.Context, error) {
		a := authOf(ctx)
		creds, perr := credentialsFromContext(ctx, a.Off())
		if perr != nil {
			return nil, refuse(ctx, perr)
		}
		if creds.Bearer != "" && creds.APIKey == "" {
			// A JWT the transport's tap verified under a (tap.go).
			if c, ok := screenedCaller(ctx, a); ok {
				return policy.WithCaller(ctx, c), nil
			}
		}
		c, err := a.Authenticate(ctx, creds)
		if err != nil {
			return nil, refuse(ctx, err)
		}
		// The access-log line names the caller, as on MCP.
		addLogFields(ctx, slog.String("flowdrop.caller", policy.Bound(c.Subject)), slog.String("flowdrop.caller_method", c.Method))
		return policy.WithCaller(ctx, c), nil
	}
	return o.unary(auth.UnaryServerInterceptor(fn)), o.stream(auth.StreamServerInterceptor(fn))
}

// credentialsFromContext extracts the bearer token, API key and verified
// client-certificate chain (credentialsFrom). ValueFromIncomingContext
// copies just the wanted values, where FromIncomingContext copies the whole
// incoming map.
func credentialsFromContext(ctx context.Context, authOff bool) (policy.Credentials, *policy.Error) {
	p, _ := peer.FromContext(ctx)
	return credentialsFrom(metadata.ValueFromIncomingContext(ctx, "authorization"),
		metadata.ValueFromIncomingContext(ctx, apiKeyHeader), p, authOff)
}

// credentialsFrom is THE reading of credentials from a call's headers
// (authorization and x-api-key values) and its peer, for the interceptor
// and the transport's tap alike. An authorization header in another
// scheme is refused rather than ignored, so a misconfigured client hears
// why. With authentication off (authOff) no credential is used, so only
// that check runs.
func credentialsFrom(authorization, apiKey []string, p *peer.Peer, authOff bool) (policy.Credentials, *policy.Error) {
	var c policy.Credentials
	if len(authorization) > 0 {
		scheme, tok, found := strings.Cut(authorization[0], " ")
		if !found || !strings.EqualFold(scheme, "bearer") || tok == "" {
			return c, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMalformed,
				Message: `authorization header must be "Bearer <api key or JWT>"`}
		}
		c.Bearer = tok
	}
	if authOff {
		return c, nil
	}
	if len(apiKey) > 0 {
		c.APIKey = apiKey[0]
	}
	if p != nil {
		// Only a chain the handshake verified identifies a caller;
		// PeerCertificates alone may be unverified (RequireAnyClientCert).
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			c.PeerCerts = ti.State.VerifiedChains[0]
		}
	}
	return c, nil
}

// newRoleInterceptor checks the caller's roles for the method (policy.Authorizer.AllowMethod).
// It must run after newAuthInterceptor; a call without a Caller is refused.
func newRoleInterceptor(az *policy.Authorizer, opts ...policyOption) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return newRoleInterceptorFrom(func() *policy.Authorizer { return az }, opts...)
}

// newRoleInterceptorFrom is newRoleInterceptor with the Authorizer looked
// up per call (the policy in force: a reload swaps it).
func newRoleInterceptorFrom(azOf func() *policy.Authorizer, opts ...policyOption) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	o := applyPolicyOptions(opts)
	check := func(ctx context.Context, method string) error {
		c, ok := policy.CallerFrom(ctx)
		if !ok {
			return statusError(&policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
				Message: "call was not authenticated"})
		}
		if err := azOf().AllowMethod(c, method); err != nil {
			return statusError(err)
		}
		return nil
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := check(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := check(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return h(srv, ss)
	}
	return o.unary(unary), o.stream(stream)
}

// newRateLimitInterceptor takes a token from the caller × method bucket
// (InvokeTool's caller × tool bucket is the pipeline's rate-limit stage).
// go-grpc-middleware's ratelimit interceptor is not used because its
// Limiter sees only the context and it flattens the error to a string,
// losing the RetryInfo detail clients need.
func newRateLimitInterceptor(rl *policy.RateLimiter) grpc.UnaryServerInterceptor {
	return newRateLimitInterceptorFrom(func() *policy.RateLimiter { return rl })
}

// newRateLimitInterceptorFrom is newRateLimitInterceptor with the limiter
// looked up per call (the policy in force: a reload swaps it).
func newRateLimitInterceptorFrom(rlOf func() *policy.RateLimiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c, ok := policy.CallerFrom(ctx)
		if !ok {
			return nil, statusError(&policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
				Message: "call was not authenticated"})
		}
		if err := rlOf().Allow(ctx, c, info.FullMethod); err != nil {
			return nil, statusError(err)
		}
		return h(ctx, req)
	}
}

// refuse maps an authentication refusal to its status and, for an
// InvokeTool call, records it as the call's outcome (for the audit line).
func refuse(ctx context.Context, err error) error {
	if c := pipeline.CallFrom(ctx); c != nil {
		return Status(c.Fail(err)).Err()
	}
	return statusError(err)
}
