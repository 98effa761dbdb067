package grpcapi

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/identity"
)

// The user-consent identity mode's stored tokens, as the admin sees them:
// who holds one at which OAuth client, never the token; revocation per
// subject, per client. ToolRegistryService's methods are admin-only
// unless the policy says otherwise (authz), as these must stay.

// WithUserTokens serves ListUserTokens and RevokeUserTokens from the
// user-consent mode in force (current; nil: not configured).
func WithUserTokens(current func() *identity.Consent) registryServiceOption {
	return func(s *registryService) { s.userTokens = current }
}

func (s *registryService) consent() (*identity.Consent, error) {
	var k *identity.Consent
	if s.userTokens != nil {
		k = s.userTokens()
	}
	if k == nil {
		return nil, status.Error(codes.FailedPrecondition, "no per-user tokens: upstream_identity.user_consent is not configured")
	}
	return k, nil
}

// maxUserTokensListed is what one ListUserTokens returns at most.
const maxUserTokensListed = 100000

// ListUserTokens lists the stored pairs (subject, client), filtered.
func (s *registryService) ListUserTokens(ctx context.Context, req *gatewayv1.ListUserTokensRequest) (*gatewayv1.ListUserTokensResponse, error) {
	k, err := s.consent()
	if err != nil {
		return nil, err
	}
	entries, err := k.List(ctx)
	if err != nil {
		// The store's error may name Redis or a path: logged by no one
		// here, sent to no one.
		return nil, status.Error(codes.Unavailable, "the user token store cannot be read right now; try again later")
	}
	resp := &gatewayv1.ListUserTokensResponse{Truncated: len(entries) >= maxUserTokensListed}
	for _, e := range entries {
		if (req.GetSubject() != "" && e.Subject != req.GetSubject()) || (req.GetClient() != "" && e.Client != req.GetClient()) {
			continue
		}
		resp.Tokens = append(resp.Tokens, &gatewayv1.UserToken{Subject: policy.Bound(e.Subject), Client: e.Client})
	}
	return resp, nil
}

// RevokeUserTokens deletes a subject's stored tokens (at one client, or all).
func (s *registryService) RevokeUserTokens(ctx context.Context, req *gatewayv1.RevokeUserTokensRequest) (*gatewayv1.RevokeUserTokensResponse, error) {
	if req.GetSubject() == "" {
		return nil, statusError(&requestFieldError{field: "subject", reason: "is required: whose tokens to revoke"})
	}
	k, err := s.consent()
	if err != nil {
		return nil, err
	}
	n, err := k.Revoke(ctx, req.GetSubject(), req.GetClient())
	if err != nil {
		return nil, status.Error(codes.Unavailable, "the user token store cannot be written right now; try again later")
	}
	return &gatewayv1.RevokeUserTokensResponse{Revoked: int32(n)}, nil
}
