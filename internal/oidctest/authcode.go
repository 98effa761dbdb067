package oidctest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization-code flow: the op keeps its requests here, sends the
// browser to /login, which approves the user the browser's UserCookie
// names and returns it to the op's callback, which issues the code.

// authRequest is op.AuthRequest in memory.
type authRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes                                  []string
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	challenge                               *oidc.CodeChallenge
	subject                                 string
	done                                    bool
	authTime                                time.Time
}

func (a *authRequest) GetID() string    { return a.id }
func (a *authRequest) GetACR() string   { return "" }
func (a *authRequest) GetAMR() []string { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string {
	return audiences(a.clientID, a.scopes)
}
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// audiences are a user token's "aud": the client, and each "aud:X" scope's X.
func audiences(clientID string, scopes []string) []string {
	aud := []string{clientID}
	for _, sc := range scopes {
		if a, ok := strings.CutPrefix(sc, "aud:"); ok {
			aud = append(aud, a)
		}
	}
	return aud
}

// refreshToken is a refresh token's grant.
type refreshToken struct {
	subject, clientID string
	scopes            []string
	authTime          time.Time
}

// refreshRequest is op.RefreshTokenRequest for a refreshToken.
type refreshRequest struct{ rt refreshToken }

func (r *refreshRequest) GetAMR() []string             { return []string{"pwd"} }
func (r *refreshRequest) GetAudience() []string        { return audiences(r.rt.clientID, r.rt.scopes) }
func (r *refreshRequest) GetAuthTime() time.Time       { return r.rt.authTime }
func (r *refreshRequest) GetClientID() string          { return r.rt.clientID }
func (r *refreshRequest) GetScopes() []string          { return r.rt.scopes }
func (r *refreshRequest) GetSubject() string           { return r.rt.subject }
func (r *refreshRequest) SetCurrentScopes(sc []string) { r.rt.scopes = sc }

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	a := &authRequest{id: randomID(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State, nonce: r.Nonce,
		scopes: slices.Clone(r.Scopes), responseType: r.ResponseType, responseMode: r.ResponseMode}
	if r.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	s.authRequests[a.id] = a
	s.mu.Unlock()
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.authRequests[id]; ok {
		return a, nil
	}
	return nil, errors.New("no such auth request")
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("code invalid or used")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called once the code is exchanged: the code is
// used up with it.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	var rt refreshToken
	switch req := r.(type) {
	case *authRequest:
		s.codeExchanges.Add(1)
		rt = refreshToken{subject: req.subject, clientID: req.clientID, scopes: req.scopes, authTime: req.authTime}
	case *refreshRequest:
		s.refreshes.Add(1)
		rt = req.rt
	default:
		return "", "", time.Time{}, errUnsupported
	}
	id, exp, err := s.CreateAccessToken(ctx, r)
	if err != nil {
		return "", "", time.Time{}, err
	}
	next := randomID()
	s.mu.Lock()
	delete(s.refreshTokens, current) // rotated: the old one is used up
	s.refreshTokens[next] = rt
	s.mu.Unlock()
	return id, next, exp, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, tok string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshTokens[tok]
	if !ok {
		return nil, op.ErrInvalidRefreshToken
	}
	return &refreshRequest{rt: rt}, nil
}

// RevokeRefreshTokens ends every refresh token of subject (the user
// withdrew consent at the provider).
func (p *Provider) RevokeRefreshTokens(subject string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	for k, rt := range p.store.refreshTokens {
		if rt.subject == subject {
			delete(p.store.refreshTokens, k)
		}
	}
}

// login approves the auth request ?id= for the user the browser's
// UserCookie names, without asking, and returns to the op's callback.
func (s *storage) login(issuer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(UserCookie)
		if err != nil || c.Value == "" {
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		id := r.URL.Query().Get("id")
		s.mu.Lock()
		a, ok := s.authRequests[id]
		if ok {
			a.subject, a.done, a.authTime = c.Value, true, time.Now()
		}
		s.mu.Unlock()
		if !ok {
			http.Error(w, "no such auth request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, issuer+"/authorize/callback?id="+url.QueryEscape(id), http.StatusFound)
	}
}
