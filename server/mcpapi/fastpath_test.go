package mcpapi

import (
	"os"
	"strings"
	"testing"
)

// fastPathMirrors are the module versions whose code fastpath.go mirrors
// (the go-sdk's checks and framing, and the decoder it decodes with). A
// change of either must be read against fastpath.go before this list is
// updated: the differential test only covers the requests it sends.
var fastPathMirrors = map[string]string{
	"github.com/modelcontextprotocol/go-sdk": "v1.8.0",
	"github.com/segmentio/encoding":          "v0.5.4",
}

// TestFastPathMirrorsTheBuiltSDK: the module's go.mod requires the versions
// fastpath.go was written against.
func TestFastPathMirrorsTheBuiltSDK(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) >= 2 {
			required[f[0]] = f[1]
		}
	}
	for path, want := range fastPathMirrors {
		if got := required[path]; got != want {
			t.Errorf("go.mod requires %s %q; fastpath.go mirrors %s: check it against that code, then update fastPathMirrors", path, got, want)
		}
	}
}

// TestPlainNumbers: which numbers plainNumbers lets pass without decoding.
func TestPlainNumbers(t *testing.T) {
	for _, tc := range []struct {
		json   string
		plain  bool
		reason string
	}{
		{`{"a":1,"b":-2.5,"c":[0,10]}`, true, "ordinary numbers"},
		{`{"a":"1e400","b":true,"c":false,"d":null}`, true, "an exponent inside a string, and literals with an e, are not numbers"},
		{`{"a":1e3}`, false, "an exponent may overflow float64"},
		{`{"a":-1E-3}`, false, "capital E too"},
		{`{"a":"\"","b":2e1}`, false, "an escaped quote does not end the string"},
		{`[1` + zeros(308) + `]`, false, "309 integer digits can overflow"},
		{`[1` + zeros(307) + `.5]`, true, "308 integer digits cannot"},
	} {
		if got := plainNumbers([]byte(tc.json)); got != tc.plain {
			t.Errorf("plainNumbers(%.40q) = %v, want %v (%s)", tc.json, got, tc.plain, tc.reason)
		}
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}
