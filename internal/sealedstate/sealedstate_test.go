package sealedstate

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func rawKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func TestSealOpen(t *testing.T) {
	old, err := New(rawKey(1))
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := New(rawKey(2), rawKey(1))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(rawKey(3))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"tool":"up.ask"}`)
	sealedOld := old.Seal("p", plain)
	sealedNew := rotated.Seal("p", plain)
	flip := func(s string, i int) string {
		b, _ := base64.RawURLEncoding.DecodeString(s)
		b[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	rows := []struct {
		reason  string
		ring    *Keyring
		purpose string
		sealed  string
		ok      bool
	}{
		{"a value opens under the key that sealed it", old, "p", sealedOld, true},
		{"rotation overlap: a value sealed under the old key opens while the old key is still listed", rotated, "p", sealedOld, true},
		{"a value sealed under the new key opens with it", rotated, "p", sealedNew, true},
		{"a value sealed under the new key does not open where only the old key is held", old, "p", sealedNew, false},
		{"a keyring without the key refuses the value", other, "p", sealedOld, false},
		{"a value sealed for one purpose does not open for another", old, "q", sealedOld, false},
		{"one changed ciphertext bit is refused", old, "p", flip(sealedOld, len(plain)+10), false},
		{"a changed key id is refused", rotated, "p", flip(sealedOld, 1), false},
		{"a changed nonce is refused", old, "p", flip(sealedOld, 6), false},
		{"a changed version is refused", old, "p", flip(sealedOld, 0), false},
		{"truncated text is refused", old, "p", sealedOld[:12], false},
		{"not base64 is refused", old, "p", "!!!", false},
		{"empty is refused", old, "p", "", false},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			got, err := row.ring.Open(row.purpose, row.sealed)
			if row.ok {
				if err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("Open = %q, %v; want the plain text", got, err)
				}
				return
			}
			if !errors.Is(err, ErrUnsealable) {
				t.Fatalf("Open = %q, %v; want ErrUnsealable", got, err)
			}
		})
	}
	if old.Seal("p", plain) == sealedOld {
		t.Error("two seals of the same value are equal: the nonce is not fresh")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", base64.StdEncoding.EncodeToString(rawKey(7))+"\n")
	url := write("url", base64.RawURLEncoding.EncodeToString(rawKey(8)))
	short := write("short", base64.StdEncoding.EncodeToString(rawKey(7)[:16]))
	junk := write("junk", "not a key at all\n")
	rows := []struct {
		reason string
		files  []string
		ok     bool
	}{
		{"standard base64 with padding and a newline", []string{good}, true},
		{"URL base64 without padding", []string{url}, true},
		{"two keys: rotation overlap", []string{good, url}, true},
		{"a 16-byte key is refused (AES-256 only)", []string{short}, false},
		{"text that is not base64 is refused", []string{junk}, false},
		{"a missing file is refused", []string{filepath.Join(dir, "none")}, false},
		{"the same key twice is refused", []string{good, good}, false},
		{"no file is refused", nil, false},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			k, err := Load(row.files...)
			if (err == nil) != row.ok {
				t.Fatalf("Load: %v, want ok=%v", err, row.ok)
			}
			if err != nil && bytes.Contains([]byte(err.Error()), []byte("not a key at all")) {
				t.Errorf("the error quotes the file's content: %v", err)
			}
			if k != nil {
				if _, err := k.Open("p", k.Seal("p", []byte("x"))); err != nil {
					t.Errorf("a loaded ring does not open its own seal: %v", err)
				}
			}
		})
	}
}
