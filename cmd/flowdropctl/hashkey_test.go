package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestHashKey(t *testing.T) {
	const key = "fd_example_key_42"
	sum := sha256.Sum256([]byte(key))
	cases := []struct {
		name, reason, stdin string
		args                []string
		code                int
		out                 string
	}{
		{name: "stdin", reason: "the key's first line is hashed", stdin: key + "\n", code: 0, out: "sha256:" + hex.EncodeToString(sum[:]) + "\n"},
		{name: "no-newline", reason: "a trailing newline is optional", stdin: key, code: 0, out: "sha256:" + hex.EncodeToString(sum[:]) + "\n"},
		{name: "empty", reason: "nothing to hash", stdin: "", code: 2},
		{name: "argument", reason: "keys on the command line would leak into shell history", args: []string{key}, code: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"hash-key"}, tc.args...), strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.code || (tc.out != "" && out.String() != tc.out) {
				t.Fatalf("code %d out %q, want %d %q (%s)", code, out.String(), tc.code, tc.out, tc.reason)
			}
			if strings.Contains(errb.String(), key) {
				t.Errorf("stderr echoes the key")
			}
		})
	}
}
