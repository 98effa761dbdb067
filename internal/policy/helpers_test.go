package policy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

func mustStruct(t testing.TB, js string) *structpb.Struct {
	t.Helper()
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(js), s); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	return s
}

// testKeys are generated per test run; no key material is committed.
type testKeys struct {
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	jwksRaw []byte
}

func newTestKeys(t testing.TB) *testKeys { return newTestKeysGen(t, "1") }

// newTestKeysGen makes keys with kids "rsa-<gen>" and "ec-<gen>".
func newTestKeysGen(t testing.TB, gen string) *testKeys {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var set jwkset.JWKSMarshal
	for _, k := range []struct {
		pub any
		kid string
		alg jwkset.ALG
	}{{rk.Public(), "rsa-" + gen, jwkset.AlgRS256}, {ek.Public(), "ec-" + gen, jwkset.AlgES256}} {
		j, err := jwkset.NewJWKFromKey(k.pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: k.alg}})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, j.Marshal())
	}
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return &testKeys{rsa: rk, ec: ek, jwksRaw: raw}
}

func (k *testKeys) file(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, k.jwksRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	testIssuer   = "https://idp.test"
	testAudience = "flowdrop-gateway"
)

// claims returns valid claims; mutate to make them invalid.
func validClaims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"sub": sub, "iss": testIssuer, "aud": testAudience,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"roles": []string{RoleInvoker},
	}
}

func mint(t testing.TB, m jwt.SigningMethod, kid string, key crypto.PrivateKey, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantPolicyError(t testing.TB, err error, code Code, reason string) *Error {
	t.Helper()
	pe, ok := AsError(err)
	if !ok {
		t.Fatalf("got %v, want a *policy.Error %s/%s", err, code, reason)
	}
	if pe.Code != code || pe.Reason != reason {
		t.Fatalf("got %s/%s (%q), want %s/%s", pe.Code, pe.Reason, pe.Message, code, reason)
	}
	return pe
}
