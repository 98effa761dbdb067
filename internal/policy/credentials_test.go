package policy

import (
	"strings"
	"testing"
)

func TestCredentialSources(t *testing.T) {
	c, err := NewCredentialSources([]CredentialSource{
		{Env: "UPSTREAM_TOKEN", Origins: []string{"https://MCP.example.com:443/"}},
		{File: "/etc/flowdrop/creds/*", Origins: []string{"http://127.0.0.1:8931", "https://[::1]:8443"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, reason, env, file, url, want string // want: "" allowed, else a substring of the refusal
	}{
		{name: "env", reason: "declared, its origin (case and the default port aside)", env: "UPSTREAM_TOKEN", url: "https://mcp.example.com/mcp"},
		{name: "env-other-origin", reason: "declared, another origin", env: "UPSTREAM_TOKEN", url: "https://evil.example.com/mcp", want: "may not be sent to https://evil.example.com"},
		{name: "env-other-port", reason: "a port is part of the origin", env: "UPSTREAM_TOKEN", url: "https://mcp.example.com:8443/mcp", want: "may not be sent to"},
		{name: "env-scheme", reason: "http is another origin than https", env: "UPSTREAM_TOKEN", url: "http://mcp.example.com/mcp", want: "may not be sent to"},
		{name: "env-undeclared", reason: "any other variable", env: "HOME", url: "https://mcp.example.com/mcp", want: "not a credential source"},
		{name: "file-glob", reason: "a file the glob matches", file: "/etc/flowdrop/creds/notes.token", url: "http://127.0.0.1:8931/mcp"},
		{name: "file-ipv6", reason: "an IPv6 origin", file: "/etc/flowdrop/creds/a", url: "https://[::1]:8443/mcp"},
		{name: "file-deeper", reason: "* stays within one segment", file: "/etc/flowdrop/creds/sub/a", url: "http://127.0.0.1:8931/mcp", want: "not a credential source"},
		{name: "file-dotdot", reason: "no escaping the glob's directory", file: "/etc/flowdrop/creds/../../shadow", url: "http://127.0.0.1:8931/mcp", want: "clean absolute path"},
		{name: "none", reason: "no reference: nothing to allow", url: "https://anywhere.example.com/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := c.Allow(tc.env, tc.file, tc.url)
			switch {
			case tc.want == "" && ce != nil:
				t.Errorf("refused: %v (%s)", ce, tc.reason)
			case tc.want != "" && (ce == nil || !strings.Contains(ce.Reason, tc.want)):
				t.Errorf("got %v; want a refusal containing %q (%s)", ce, tc.want, tc.reason)
			}
		})
	}
	if ce := (*CredentialSources)(nil).Allow("UPSTREAM_TOKEN", "", "https://mcp.example.com"); ce == nil {
		t.Error("no sources declared: a reference must be refused")
	}
}

func TestCredentialSourcesRefuseBadDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name, reason, want string
		src                CredentialSource
	}{
		{name: "both", reason: "one source is one thing", src: CredentialSource{Env: "A", File: "/a", Origins: []string{"https://a"}}, want: "exactly one of env and file"},
		{name: "neither", reason: "an empty entry", src: CredentialSource{Origins: []string{"https://a"}}, want: "exactly one of env and file"},
		{name: "no-origins", reason: "a source must say where it may go", src: CredentialSource{Env: "A"}, want: "credentials[0].origins"},
		{name: "relative", reason: "files are absolute", src: CredentialSource{File: "creds/*", Origins: []string{"https://a"}}, want: "clean absolute path"},
		{name: "bad-glob", reason: "a glob that does not compile", src: CredentialSource{File: "/creds/[", Origins: []string{"https://a"}}, want: "not a valid glob"},
		{name: "origin-path", reason: "an origin has no path", src: CredentialSource{Env: "A", Origins: []string{"https://a/mcp"}}, want: "credentials[0].origins[0]"},
		{name: "origin-scheme", reason: "http or https only", src: CredentialSource{Env: "A", Origins: []string{"ftp://a"}}, want: "http or https"},
		{name: "env-name", reason: "an environment variable name", src: CredentialSource{Env: "A=B", Origins: []string{"https://a"}}, want: "not an environment variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewCredentialSources([]CredentialSource{tc.src}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v; want one containing %q (%s)", err, tc.want, tc.reason)
			}
		})
	}
}
