// Package sealedstate seals small values a gateway hands to a caller and
// must get back unchanged (the state of an MCP multi round-trip call): each
// sealed value is AES-256-GCM under a key of the gateway's own, so the
// caller can neither read nor change it, and any replica holding the key
// opens it. A Keyring holds the key that seals and the older keys that
// still open (rotation overlap); a value sealed under a key no longer held
// is refused like a tampered one.
package sealedstate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version is the first byte of every sealed value; a change of format
// changes it, and a value of another version is refused.
const version = 1

// idSize is the size of the key id a sealed value names its key by (a
// prefix of the key's SHA-256: enough to choose among a few keys, not to
// learn anything of the key).
const idSize = 4

// ErrUnsealable is Open's error for a value that is not one this keyring
// sealed: malformed, changed, sealed for another purpose, or under a key
// it no longer holds. The cases are not told apart: a caller learns
// nothing from the refusal but that the value is refused.
var ErrUnsealable = errors.New("not a value this gateway sealed")

type key struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// Keyring seals under its first key and opens under any of them. Safe for
// concurrent use; immutable once made.
type Keyring struct {
	keys []key
}

// New is a keyring of raw keys (each KeySize bytes): the first seals.
func New(raw ...[]byte) (*Keyring, error) {
	if len(raw) == 0 {
		return nil, errors.New("no key")
	}
	k := &Keyring{}
	for i, r := range raw {
		if len(r) != KeySize {
			return nil, fmt.Errorf("key %d: %d bytes, want %d", i+1, len(r), KeySize)
		}
		block, err := aes.NewCipher(r)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(r)
		var id [idSize]byte
		copy(id[:], sum[:])
		for _, prev := range k.keys {
			if prev.id == id {
				return nil, fmt.Errorf("key %d: the same key (or the same id) is listed twice", i+1)
			}
		}
		k.keys = append(k.keys, key{id: id, aead: aead})
	}
	return k, nil
}

// Random is a keyring of one fresh random key: values it seals open only
// in this process.
func Random() *Keyring {
	r := make([]byte, KeySize)
	_, _ = rand.Read(r) // crypto/rand.Read never fails (Go 1.24+)
	k, _ := New(r)
	return k
}

// Load is a keyring of key files, the first sealing. A file holds one key,
// KeySize random bytes base64-encoded (standard or URL alphabet, padding
// optional; `openssl rand -base64 32`), surrounding whitespace ignored.
// Errors name the file, never its content.
func Load(files ...string) (*Keyring, error) {
	if len(files) == 0 {
		return nil, errors.New("no key file")
	}
	raw := make([][]byte, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		k, err := decodeKey(bytes.TrimSpace(b))
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", f, err)
		}
		raw = append(raw, k)
	}
	return New(raw...)
}

func decodeKey(text []byte) ([]byte, error) {
	s := strings.TrimRight(string(text), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("the key is %d bytes, want %d (base64 of %d random bytes)", len(k), KeySize, KeySize)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("not base64 of %d random bytes", KeySize)
}

// Seal is plain sealed under the first key, bound to purpose (a value
// sealed for one purpose does not open for another), as URL-safe base64
// text: version, key id, nonce, ciphertext and tag.
func (k *Keyring) Seal(purpose string, plain []byte) string {
	kk := k.keys[0]
	n := kk.aead.NonceSize()
	out := make([]byte, 1+idSize+n, 1+idSize+n+len(plain)+kk.aead.Overhead())
	out[0] = version
	copy(out[1:], kk.id[:])
	_, _ = rand.Read(out[1+idSize:])
	out = kk.aead.Seal(out, out[1+idSize:], plain, aad(purpose, out[:1+idSize]))
	return base64.RawURLEncoding.EncodeToString(out)
}

// Open is the plain text Seal sealed for purpose under a key of the ring,
// or ErrUnsealable.
func (k *Keyring) Open(purpose, sealed string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(b) < 1+idSize || b[0] != version {
		return nil, ErrUnsealable
	}
	for _, kk := range k.keys {
		if !bytes.Equal(kk.id[:], b[1:1+idSize]) {
			continue
		}
		n := kk.aead.NonceSize()
		if len(b) < 1+idSize+n+kk.aead.Overhead() {
			return nil, ErrUnsealable
		}
		plain, err := kk.aead.Open(nil, b[1+idSize:1+idSize+n], b[1+idSize+n:], aad(purpose, b[:1+idSize]))
		if err != nil {
			return nil, ErrUnsealable
		}
		return plain, nil
	}
	return nil, ErrUnsealable
}

// aad binds the purpose and the header to the ciphertext.
func aad(purpose string, header []byte) []byte {
	return append([]byte("flowdrop-sealed\x00"+purpose+"\x00"), header...)
}
