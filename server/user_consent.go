package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/server/identity"
)

// The user-consent identity mode's parts the gateway owns, beyond the
// policy: the token store (opened once, kept across reloads, closed with
// the gateway) and the flow's browser endpoints on the MCP listener.

// redisUserTokens is the fleet store's namespace in Redis.
const redisUserTokens = "flowdrop:usertokens:"

// withConsentStore is u with the user-consent mode's store set (opened on
// first use). The store is where the policy that first configured it
// says; a reload that moves it is refused (a restart moves it), so no
// token is stranded in a store no replica reads.
func (g *Gateway) withConsentStore(u identity.Config) (identity.Config, error) {
	if u.Consent == nil {
		return u, nil
	}
	k := *u.Consent
	want := "redis"
	if !k.Redis {
		want = "bolt " + k.BoltFile
	}
	g.userTokensMu.Lock()
	defer g.userTokensMu.Unlock()
	switch {
	case g.userTokens != nil && g.userTokensAt != want:
		return u, fmt.Errorf("upstream_identity.user_consent.store: the gateway keeps the users' tokens in %s; moving them to %s needs a restart", g.userTokensAt, want)
	case g.userTokens == nil && k.Redis:
		if g.redis == nil {
			return u, errors.New("upstream_identity.user_consent.store.redis: the gateway has no redis configured")
		}
		g.userTokens, g.userTokensAt = redisTokenStore{g.redis.UserTokens(redisUserTokens)}, want
	case g.userTokens == nil:
		s, err := identity.OpenBoltTokenStore(k.BoltFile)
		if err != nil {
			return u, fmt.Errorf("upstream_identity.user_consent.store.bolt_file: %w", err)
		}
		g.userTokens, g.userTokensAt, g.userTokensClose = s, want, s.Close
	}
	k.Store = g.userTokens
	u.Consent = &k
	return u, nil
}

func (g *Gateway) closeUserTokens() {
	g.userTokensMu.Lock()
	defer g.userTokensMu.Unlock()
	if g.userTokensClose != nil {
		_ = g.userTokensClose()
		g.userTokensClose = nil
	}
}

// consentBrowser is the flow's endpoints for the MCP listener.
func (g *Gateway) consentBrowser() map[string]http.Handler {
	h := identity.ConsentHandler(func() *identity.Consent { return g.identity.Load().Consent() }, g.log)
	return map[string]http.Handler{identity.ConsentPathPrefix: h}
}

// UserConsent is the user-consent mode in force (nil: not configured):
// what the admin API lists and revokes through.
func (g *Gateway) UserConsent() *identity.Consent { return g.identity.Load().Consent() }

// redisTokenStore is redisstate's store as an identity.TokenStore.
type redisTokenStore struct{ s *redisstate.UserTokens }

func (r redisTokenStore) Get(ctx context.Context, subject, client string) ([]byte, error) {
	b, err := r.s.Get(ctx, subject, client)
	if errors.Is(err, redisstate.ErrNoUserToken) {
		return nil, identity.ErrNoToken
	}
	return b, err
}

func (r redisTokenStore) Put(ctx context.Context, subject, client string, sealed []byte, max int) error {
	err := r.s.Put(ctx, subject, client, sealed, max)
	if errors.Is(err, redisstate.ErrUserTokensFull) {
		return identity.ErrStoreFull
	}
	return err
}

func (r redisTokenStore) Delete(ctx context.Context, subject, client string) (int, error) {
	return r.s.Delete(ctx, subject, client)
}

func (r redisTokenStore) List(ctx context.Context, limit int) ([]identity.TokenEntry, error) {
	pairs, err := r.s.List(ctx, limit)
	out := make([]identity.TokenEntry, len(pairs))
	for i, p := range pairs {
		out[i] = identity.TokenEntry{Client: p[0], Subject: p[1]}
	}
	return out, err
}
