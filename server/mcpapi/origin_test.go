package mcpapi

import (
	"strings"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, errHas, reason string
	}{
		{in: "https://app.example.com", want: "https://app.example.com", reason: "as a browser serializes it"},
		{in: "HTTPS://App.Example.COM", want: "https://app.example.com", reason: "scheme and host compare case-insensitively"},
		{in: "https://app.example.com:443", want: "https://app.example.com", reason: "a default port is what browsers leave out"},
		{in: "http://app.example.com:80", want: "http://app.example.com", reason: "http's default port too"},
		{in: "https://app.example.com:8443", want: "https://app.example.com:8443", reason: "another port is another origin"},
		{in: "http://[::1]:5173", want: "http://[::1]:5173", reason: "an IPv6 host keeps its brackets"},
		{in: "http://[::1]", want: "http://[::1]", reason: "without a port too"},
		{in: "chrome-extension://abcdefghijklmnop", want: "chrome-extension://abcdefghijklmnop", reason: "browser extensions have origins of their own"},
		{in: "null", errHas: "never allowed", reason: "sandboxed frames and file: pages share the origin null"},
		{in: "https://*.example.com", errHas: "wildcards", reason: "a wildcard would let any subdomain (or takeover) in"},
		{in: "*", errHas: "wildcards", reason: "allow-all is not an origin"},
		{in: "https://app.example.com/", errHas: "without a path", reason: "browsers never send a path, so it could never match"},
		{in: "https://app.example.com/app", errHas: "without a path", reason: "a path is not part of an origin"},
		{in: "https://app.example.com?x=1", errHas: "without a path, query", reason: "nor a query"},
		{in: "https://user@app.example.com", errHas: "user info", reason: "nor credentials"},
		{in: "app.example.com", errHas: "scheme://host", reason: "the scheme is part of the origin"},
		{in: "https://app.example.com:99999", errHas: "port", reason: "a port is 1..65535"},
		{in: "https://bücher.example", errHas: "punycode", reason: "browsers send the ASCII form; a Unicode entry would never match"},
		{in: "", errHas: "scheme://host", reason: "empty is not an origin"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeOrigin(tc.in)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("NormalizeOrigin(%q) = %q, %v; want an error with %q (%s)", tc.in, got, err, tc.errHas, tc.reason)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q (%s)", tc.in, got, err, tc.want, tc.reason)
			}
		})
	}
}

func TestParseOriginsNamesEachBadEntry(t *testing.T) {
	t.Parallel()
	_, err := ParseOrigins([]string{"https://ok.example", "null", "https://*.example", strings.Repeat("x", 5000)})
	if err == nil {
		t.Fatal("bad entries accepted")
	}
	for _, want := range []string{"mcp.allowed_origins[1]", "mcp.allowed_origins[2]", "mcp.allowed_origins[3]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "[0]") || len(err.Error()) > 2000 {
		t.Errorf("error names a good entry or echoes a long one unbounded: %d bytes", len(err.Error()))
	}
}
