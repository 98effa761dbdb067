package policy

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// CredentialSource is one credential source the operator declares in the
// policy file (credentials: [...]): an environment variable of the gateway
// (Env) or files on its host (File: an absolute path, or a glob whose `*`,
// `?` and `[...]` match within one path segment), and the origins
// (scheme://host[:port]) a credential read from it may be sent to.
type CredentialSource struct {
	Env     string
	File    string
	Origins []string
}

// CredentialSources are the declared sources. A tool may name a credential
// (spec.mcp_tool.credential_env, credential_file) only when a declared
// source holds it for the tool's origin: a registry admin can then neither
// read a secret the operator did not put there for tools (another
// variable, any readable file) nor send it anywhere else. The nil
// *CredentialSources declares none.
type CredentialSources struct {
	sources []credentialSource
}

type credentialSource struct {
	env, file string
	origins   map[string]bool
}

// CredentialError is a credential reference no declared source allows.
// Field is "credential_env" or "credential_file"; neither the reason nor
// anything else quotes what the source holds (it is never read).
type CredentialError struct {
	Field  string
	Reason string
}

func (e *CredentialError) Error() string { return e.Field + ": " + e.Reason }

// NewCredentialSources checks and compiles the declared sources; errors
// name credentials[i] and the field.
func NewCredentialSources(decl []CredentialSource) (*CredentialSources, error) {
	c := &CredentialSources{}
	for i, d := range decl {
		at := fmt.Sprintf("credentials[%d]", i)
		switch {
		case (d.Env == "") == (d.File == ""):
			return nil, fmt.Errorf("%s: set exactly one of env and file", at)
		case d.Env != "" && !ValidEnvName(d.Env):
			return nil, fmt.Errorf("%s.env: %q is not an environment variable name", at, Bound(d.Env))
		case d.File != "" && (!filepath.IsAbs(d.File) || filepath.Clean(d.File) != d.File):
			return nil, fmt.Errorf("%s.file: %q must be a clean absolute path (or glob)", at, Bound(d.File))
		case len(d.Origins) == 0:
			return nil, fmt.Errorf("%s.origins: name the origins (scheme://host[:port]) its credential may be sent to", at)
		}
		if d.File != "" {
			if _, err := path.Match(d.File, d.File); err != nil {
				return nil, fmt.Errorf("%s.file: %q is not a valid glob: %v", at, Bound(d.File), err)
			}
		}
		s := credentialSource{env: d.Env, file: d.File, origins: map[string]bool{}}
		for j, o := range d.Origins {
			norm, err := ParseOrigin(o)
			if err != nil {
				return nil, fmt.Errorf("%s.origins[%d]: %v", at, j, err)
			}
			s.origins[norm] = true
		}
		c.sources = append(c.sources, s)
	}
	return c, nil
}

// Allow reports whether a tool reaching target (its upstream URL) may name
// the credential in env or file (at most one set; neither: nothing to
// allow). It reads neither the variable nor the file.
func (c *CredentialSources) Allow(env, file, target string) *CredentialError {
	if env == "" && file == "" {
		return nil
	}
	field, name := "credential_env", "environment variable "+env
	if env == "" {
		field, name = "credential_file", "file "+file
	}
	if file != "" && filepath.Clean(file) != file {
		return &CredentialError{Field: field, Reason: "must be a clean absolute path (no . or .. segments, no repeated /)"}
	}
	origin, err := ParseURLOrigin(target)
	if err != nil {
		return &CredentialError{Field: field, Reason: "the tool's URL has no http(s) origin to send a credential to"}
	}
	declared := false
	if c != nil {
		for _, s := range c.sources {
			if !s.holds(env, file) {
				continue
			}
			declared = true
			if s.origins[origin] {
				return nil
			}
		}
	}
	if !declared {
		return &CredentialError{Field: field, Reason: fmt.Sprintf("%s is not a credential source the gateway's policy declares (credentials)", Bound(name))}
	}
	return &CredentialError{Field: field, Reason: fmt.Sprintf("the policy's credential source for %s may not be sent to %s (credentials[].origins)", Bound(name), origin)}
}

func (s credentialSource) holds(env, file string) bool {
	if env != "" {
		return s.env == env
	}
	if s.file == "" {
		return false
	}
	ok, _ := path.Match(s.file, file)
	return ok
}

// ParseOrigin normalizes an origin as written in a policy:
// scheme://host[:port] (http or https; no path, query or user info),
// lower case, its scheme's default port left out.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("%q: want scheme://host[:port], nothing after it", Bound(s))
	}
	return originOf(u, s)
}

// ParseURLOrigin is the origin of an http(s) URL.
func ParseURLOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL", Bound(s))
	}
	return originOf(u, s)
}

func originOf(u *url.URL, s string) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", fmt.Errorf("%q: want an http or https origin with a host", Bound(s))
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// ValidEnvName reports whether k is a portable environment variable name.
func ValidEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
