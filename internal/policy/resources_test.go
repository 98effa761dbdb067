package policy

import (
	"strings"
	"testing"
)

func TestURIAccess(t *testing.T) {
	az, err := NewAuthorizer(AuthzConfig{
		Default: ToolAccess{Allow: []string{"*"}},
		Callers: map[string]ToolAccess{
			"reader": {Allow: []string{"*"}, Resources: URIAccess{Allow: []string{"flowdrop-mcp://docs_/*"}, Deny: []string{"*/secret/*", "*?token=*"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reader, nobody := Caller{Subject: "reader"}, Caller{Subject: "someone"}
	for _, tc := range []struct {
		name, reason string
		c            Caller
		uri          string
		ok           bool
	}{
		{"allowed", "* crosses / in a URI pattern", reader, "flowdrop-mcp://docs_/file:///a/b/c.md", true},
		{"other-namespace", "the allow pattern names one upstream", reader, "flowdrop-mcp://ops_/file:///a.md", false},
		{"denied-path", "deny wins over allow", reader, "flowdrop-mcp://docs_/file:///secret/k.md", false},
		{"denied-query", "deny patterns match anywhere a * lets them", reader, "flowdrop-mcp://docs_/x://y?token=1", false},
		{"prefix-only", "a pattern matches the whole URI, not a prefix of it", reader, "flowdrop-mcp://docs_", false},
		{"no-resource-list", "an entry without resources allows none (fail closed)", nobody, "flowdrop-mcp://docs_/a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := az.AllowResource(tc.c, tc.uri); (err == nil) != tc.ok {
				t.Fatalf("%s: AllowResource(%q) = %v", tc.reason, tc.uri, err)
			}
		})
	}
	if !az.MayListResources(reader) || az.MayListResources(nobody) {
		t.Fatal("MayListResources: only a caller with a resource allow list lists resources")
	}
}

func TestURIAccessRefusedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, reason, pattern, want string
	}{
		{"empty", "an empty pattern matches nothing: a typo", "", "empty URI pattern"},
		{"oversized", "patterns are bounded (the matcher is quadratic)", strings.Repeat("a", 1025), "over 1024"},
		{"control", "a newline in a pattern is a mistake", "a\nb", "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAuthorizer(AuthzConfig{Default: ToolAccess{Allow: []string{"*"}, Resources: URIAccess{Deny: []string{tc.pattern}}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: got %v, want an error saying %q", tc.reason, err, tc.want)
			}
		})
	}
}

func TestMatchURIIsBounded(t *testing.T) {
	// A pattern of many stars against a long non-matching URI: quadratic
	// at worst, not exponential.
	p := strings.Repeat("*a", 500) + "b"
	s := strings.Repeat("a", 8000)
	if matchURI(p, s) {
		t.Fatal("matched")
	}
}
