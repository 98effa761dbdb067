package policy

import (
	"context"
	"errors"

	"github.com/golang-jwt/jwt/v5"
)

// Screen answers what Authenticate would from the credentials alone, without
// I/O and without waiting: it runs before a request's message is read (the
// gRPC transport's tap, on the connection's reader goroutine), so that a
// caller who cannot be authenticated costs no more than its headers.
//
// verified is false only for a JWT signed with a key the cached JWK Set
// does not hold (Authenticate would fetch the set, which Screen must not):
// its form, algorithm and claims were checked but not its signature, and
// caller is the zero Caller. Otherwise err is Authenticate's refusal, or
// nil with Authenticate's caller.
func (a *Authenticator) Screen(c Credentials) (caller Caller, verified bool, err error) {
	if a.off || c.APIKey != "" || c.Bearer == "" || a.jwt == nil {
		// API keys and certificates are decided in memory.
		caller, err = a.Authenticate(context.Background(), c)
		return caller, err == nil, err
	}
	if caller, ok := a.lookupKey(c.Bearer); ok {
		return caller, true, nil
	}
	caller, verified, err = a.jwt.screen(c.Bearer)
	caller, err = a.bearerJWTError(caller, err)
	return caller, verified, err
}

// noFetch is a context already done: a key lookup under it answers from the
// cached JWK Set and never waits for (or starts) a refetch.
var noFetch = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (j *jwtAuth) screen(raw string) (Caller, bool, error) {
	claims := jwt.MapClaims{}
	tok, err := j.parser.ParseWithClaims(raw, claims, j.keys.KeyfuncCtx(noFetch))
	if err == nil {
		caller, err := j.caller(claims)
		if err == nil {
			caller.Token = bearerOf(raw, claims)
		}
		return caller, err == nil, err
	}
	if !errors.Is(err, context.Canceled) {
		return Caller{}, false, j.classify(tok, err)
	}
	// The key is not cached; the claims were parsed before the lookup.
	if err := j.validator.Validate(claims); err != nil {
		return Caller{}, false, j.classify(tok, err)
	}
	if _, err := j.caller(claims); err != nil {
		return Caller{}, false, err
	}
	return Caller{}, false, nil
}
