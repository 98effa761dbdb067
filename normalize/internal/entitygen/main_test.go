package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestTableUpToDate regenerates the table from this toolchain's
// html/entity.go and requires normalize/entity_table.go to match byte for
// byte, so a hand edit or a stale table fails here rather than in review.
func TestTableUpToDate(t *testing.T) {
	src, err := DefaultSource()
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Generate(code)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../entity_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("normalize/entity_table.go is stale or edited by hand: run `go generate ./normalize`")
	}
}

func TestGenerateRejects(t *testing.T) {
	src, err := DefaultSource()
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		code, wantErr string
		reason        string
	}{
		{strings.Replace(string(code), "\t\t\"zwnj;\":", "\t\t// \"zwnj;\":", 1), "found 2230 names",
			"a name missing from the source table is noticed"},
		{strings.Replace(string(code), "// \"nLt;\"", "// \"nLtX\"", 1), "found 2230 names",
			"the commented-out nLt; entry must be recovered"},
		{strings.Replace(string(code), "\"zwnj;\":", "\"zw-nj;\":", 1), "not alphanumeric",
			"a name the decoder's scanner could never match is refused"},
		{"package html\n", "found 0 entity maps", "a file without the tables"},
		{"package html\nfunc {", "expected", "a file that does not parse"},
	}
	for _, tc := range tests {
		_, err := Generate([]byte(tc.code))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Generate error = %v, want one containing %q", tc.reason, err, tc.wantErr)
		}
	}
}
