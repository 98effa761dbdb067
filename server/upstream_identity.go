package server

// jwks is the admin listener's JWK Set: the public keys of the tokens the
// policy in force signs for backends (gateway-signed), nil when it has no
// signing keys.
func (g *Gateway) jwks() []byte {
	if s := g.identity.Load().Signer(); s != nil {
		return s.JWKS()
	}
	return nil
}
