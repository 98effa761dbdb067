package server

import (
	"context"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// This file adapts the transport-neutral policy package to gRPC. The chain
// (chain.go) decides where each interceptor goes; these are only constructors.

// policyErrorDomain is the ErrorInfo domain for policy refusals (the same
// domain as the gateway's other errors).
const policyErrorDomain = "flowdrop.dev"

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
	o := applyPolicyOptions(opts)
	fn := func(ctx context.Context) (context.Context, error) {
		creds, perr := credentialsFromContext(ctx, a.Off())
		if perr != nil {
			return nil, policyErrorToStatus(perr).Err()
		}
		c, err := a.Authenticate(ctx, creds)
		if err != nil {
			return nil, policyErr(err)
		}
		return policy.WithCaller(ctx, c), nil
	}
	return o.unary(auth.UnaryServerInterceptor(fn)), o.stream(auth.StreamServerInterceptor(fn))
}

// credentialsFromContext extracts the bearer token, API key and verified
// client-certificate chain. An authorization header in another scheme is
// refused rather than ignored, so a misconfigured client hears why. With
// authentication off (authOff) no credential is used, so only that check
// runs. ValueFromIncomingContext copies just the wanted values, where
// FromIncomingContext copies the whole incoming map.
func credentialsFromContext(ctx context.Context, authOff bool) (policy.Credentials, *policy.Error) {
	var c policy.Credentials
	if vs := metadata.ValueFromIncomingContext(ctx, "authorization"); len(vs) > 0 {
		tok, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil || tok == "" {
			return c, &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMalformed,
				Message: `authorization header must be "Bearer <token>"`}
		}
		c.Bearer = tok
	}
	if authOff {
		return c, nil
	}
	if vs := metadata.ValueFromIncomingContext(ctx, apiKeyHeader); len(vs) > 0 {
		c.APIKey = vs[0]
	}
	if p, ok := peer.FromContext(ctx); ok {
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
	o := applyPolicyOptions(opts)
	check := func(ctx context.Context, method string) error {
		c, ok := policy.CallerFrom(ctx)
		if !ok {
			return policyErrorToStatus(&policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
				Message: "call was not authenticated"}).Err()
		}
		if err := az.AllowMethod(c, method); err != nil {
			return policyErr(err)
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

// newRateLimitInterceptor takes a token from the caller × tool bucket. The
// tool comes from the request (GetTool); requests without one are keyed by
// method. go-grpc-middleware's ratelimit interceptor is not used because
// its Limiter sees only the context (not the tool) and it flattens the
// error to a string, losing the RetryInfo detail clients need.
func newRateLimitInterceptor(rl *policy.RateLimiter, opts ...policyOption) grpc.UnaryServerInterceptor {
	o := applyPolicyOptions(opts)
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c, ok := policy.CallerFrom(ctx)
		if !ok {
			return nil, policyErrorToStatus(&policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonCredentialsMissing,
				Message: "call was not authenticated"}).Err()
		}
		key := info.FullMethod
		if t, ok := req.(interface{ GetTool() string }); ok {
			key = t.GetTool()
		}
		if err := rl.Allow(c, key); err != nil {
			return nil, policyErr(err)
		}
		return h(ctx, req)
	}
	return o.unary(unary)
}

// policyErr converts an error from the policy package to a gRPC status error.
func policyErr(err error) error {
	if pe, ok := policy.AsError(err); ok {
		return policyErrorToStatus(pe).Err()
	}
	return status.Error(codes.Internal, "policy check failed")
}

// policyErrorToStatus is the policy part of the server's one error mapper:
// the code, the (caller-safe) message, an ErrorInfo with the reason, and a
// RetryInfo when waiting helps.
func policyErrorToStatus(e *policy.Error) *status.Status {
	code := codes.PermissionDenied
	switch e.Code {
	case policy.Unauthenticated:
		code = codes.Unauthenticated
	case policy.PermissionDenied:
		code = codes.PermissionDenied
	case policy.ResourceExhausted:
		code = codes.ResourceExhausted
	case policy.InvalidArgument:
		code = codes.InvalidArgument
	}
	st := status.New(code, e.Message)
	md := map[string]string{"policy_reason": e.Reason}
	if e.Tool != "" {
		md["tool"] = e.Tool
	}
	if e.Limit != "" {
		md["limit"] = e.Limit
	}
	if e.Rule != "" {
		md["rule"] = e.Rule
	}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: errorInfoReason(e.Reason), Domain: policyErrorDomain, Metadata: md}}
	if e.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		return withDetails
	}
	return st
}

// errorInfoReason turns "rate-limited" into "RATE_LIMITED", the form
// google.rpc.ErrorInfo.reason requires; the original is kept in metadata.
func errorInfoReason(r string) string {
	return strings.ToUpper(strings.ReplaceAll(r, "-", "_"))
}
