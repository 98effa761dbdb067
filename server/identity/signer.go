package identity

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/flowdrop/gateway/internal/policy"
)

// SigningConfig is the gateway-signed mode's issuer and keys.
type SigningConfig struct {
	// Issuer is the minted tokens' "iss" (required).
	Issuer string
	// KeyFiles are PEM private keys (PKCS#8, SEC 1 EC or PKCS#1 RSA; P-256
	// signs ES256, Ed25519 EdDSA, RSA of 2048 bits or more RS256). The
	// first signs; every one is published, so a key is rotated with
	// overlap: list the new key first and keep the old one listed until
	// the tokens it signed have expired (TTL), then remove it.
	KeyFiles []string
	// TTL is the minted tokens' lifetime (0: DefaultTokenTTL; at most
	// MaxTokenTTL).
	TTL time.Duration
}

// Token lifetimes of the gateway-signed mode.
const (
	DefaultTokenTTL = time.Minute
	MaxTokenTTL     = time.Hour
)

// Signer mints the gateway-signed mode's tokens and publishes its keys.
type Signer struct {
	issuer string
	ttl    time.Duration
	signer jose.Signer
	jwks   []byte
}

// checkSigning is what SigningConfig is judged by without its files.
func checkSigning(c SigningConfig) error {
	switch {
	case c.Issuer == "":
		return errors.New("issuer: name the minted tokens' \"iss\"")
	case len(c.KeyFiles) == 0:
		return errors.New("key_files: list at least one PEM private key (the first signs)")
	case c.TTL < 0 || c.TTL > MaxTokenTTL:
		return fmt.Errorf("ttl %v: want at most %v (0: %v)", c.TTL, MaxTokenTTL, DefaultTokenTTL)
	}
	return nil
}

// NewSigner loads the keys. Errors name the file, never its contents.
func NewSigner(c SigningConfig) (*Signer, error) {
	if err := checkSigning(c); err != nil {
		return nil, err
	}
	s := &Signer{issuer: c.Issuer, ttl: c.TTL}
	if s.ttl == 0 {
		s.ttl = DefaultTokenTTL
	}
	var set jose.JSONWebKeySet
	seen := map[string]bool{}
	for i, f := range c.KeyFiles {
		priv, alg, err := loadKey(f)
		if err != nil {
			return nil, fmt.Errorf("key_files[%d] %s: %w", i, policy.Bound(f), err)
		}
		pub := jose.JSONWebKey{Key: priv.Public(), Algorithm: string(alg), Use: "sig"}
		thumb, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("key_files[%d] %s: %w", i, policy.Bound(f), err)
		}
		pub.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
		if seen[pub.KeyID] {
			return nil, fmt.Errorf("key_files[%d] %s: the same key is listed twice", i, policy.Bound(f))
		}
		seen[pub.KeyID] = true
		set.Keys = append(set.Keys, pub)
		if i == 0 {
			opts := (&jose.SignerOptions{}).WithType("JWT")
			if s.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: priv, KeyID: pub.KeyID}}, opts); err != nil {
				return nil, fmt.Errorf("key_files[0] %s: %w", policy.Bound(f), err)
			}
		}
	}
	var err error
	if s.jwks, err = json.Marshal(set); err != nil {
		return nil, err
	}
	return s, nil
}

// loadKey reads a PEM private key and its signing algorithm.
func loadKey(file string) (crypto.Signer, jose.SignatureAlgorithm, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", errors.New("cannot be read") // the OS error may quote the path only; keep it short
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, "", errors.New("holds no PEM block")
	}
	var key any
	switch blk.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		return nil, "", fmt.Errorf("PEM block %q is not a private key", blk.Type)
	}
	if err != nil {
		return nil, "", errors.New("the PEM block does not parse as a private key")
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", errors.New("an EC key must be on P-256 (ES256)")
		}
		return k, jose.ES256, nil
	case ed25519.PrivateKey:
		return k, jose.EdDSA, nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, "", errors.New("an RSA key must have at least 2048 bits")
		}
		return k, jose.RS256, nil
	}
	return nil, "", fmt.Errorf("a %T key cannot sign (want P-256, Ed25519 or RSA)", key)
}

// JWKS is the public keys, every one listed, as a JWK Set (JSON).
func (s *Signer) JWKS() []byte { return s.jwks }

// Issuer is the minted tokens' "iss".
func (s *Signer) Issuer() string { return s.issuer }

// mintedClaims are the gateway's own claims beside the registered ones.
type mintedClaims struct {
	Roles  []string `json:"roles,omitempty"`
	CallID string   `json:"call_id,omitempty"`
	// Method is how the caller authenticated to the gateway.
	Method string `json:"caller_method,omitempty"`
}

// Mint is the token of one call: sub the caller, aud the backend, the
// caller's roles (none for an anonymous caller: they are a gateway
// convenience, not something a backend should trust), the call id,
// iat and exp in seconds, and a random jti.
func (s *Signer) Mint(caller policy.Caller, aud, callID string, now time.Time) (string, error) {
	if s == nil {
		return "", errors.New("no signing key is configured")
	}
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", err
	}
	extra := mintedClaims{CallID: callID, Method: caller.Method}
	if caller.Method != policy.MethodNone {
		extra.Roles = caller.Roles
	}
	return jwt.Signed(s.signer).Claims(jwt.Claims{
		Issuer:   s.issuer,
		Subject:  caller.Subject,
		Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(s.ttl)),
		ID:       base64.RawURLEncoding.EncodeToString(jti[:]),
	}).Claims(extra).Serialize()
}
