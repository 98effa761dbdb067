// Package mcpupstream is what the gateway and flowdropctl share to talk to
// an upstream MCP server: the credential a reference points at, and the
// HTTP client that presents it.
package mcpupstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// Header is a credential as the header it travels in.
type Header struct{ Name, Value string }

// headerLine is "Name: value" with an HTTP header field name (RFC 9110
// token characters) before the colon.
var headerLine = regexp.MustCompile(`^([!#$%&'*+.^_|~0-9A-Za-z-]+):[ \t]*(.*)$`)

// ParseCredential reads a credential's text: one "Header-Name: value" line
// is that header; anything else is a bearer token ("Authorization: Bearer
// <token>"). Only the first line counts; surrounding space is trimmed.
// Errors never quote the text.
func ParseCredential(text string) (Header, error) {
	line, _, _ := strings.Cut(strings.TrimLeft(text, " \t\r\n"), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return Header{}, errors.New("the credential is empty")
	}
	if m := headerLine.FindStringSubmatch(line); m != nil {
		if strings.TrimSpace(m[2]) == "" {
			return Header{}, fmt.Errorf("the credential's %s header has no value", m[1])
		}
		return Header{Name: textproto.CanonicalMIMEHeaderKey(m[1]), Value: strings.TrimSpace(m[2])}, nil
	}
	if strings.ContainsAny(line, " \t") {
		return Header{}, errors.New(`the credential is neither a bearer token nor a "Header-Name: value" line`)
	}
	return Header{Name: "Authorization", Value: "Bearer " + line}, nil
}

// Reference is where a credential is kept: an environment variable's name
// or a file's path (at most one set; neither: no credential).
type Reference struct{ Env, File string }

// Load reads the credential the reference points at; ok is false when the
// reference is empty. Errors name the reference (an operator's), never
// the credential.
func (r Reference) Load() (h Header, ok bool, err error) {
	var text string
	switch {
	case r.Env != "":
		v, set := os.LookupEnv(r.Env)
		if !set {
			return Header{}, false, fmt.Errorf("environment variable %s is not set", r.Env)
		}
		text = v
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			return Header{}, false, fmt.Errorf("reading the credential file: %w", err)
		}
		text = string(b)
	default:
		return Header{}, false, nil
	}
	h, err = ParseCredential(text)
	if err != nil {
		return Header{}, false, fmt.Errorf("%s: %w", r, err)
	}
	return h, true, nil
}

// String names the reference, for logs.
func (r Reference) String() string {
	switch {
	case r.Env != "":
		return "environment variable " + r.Env
	case r.File != "":
		return "credential file " + r.File
	}
	return "no credential"
}

// HTTPClient is the HTTP client of a session to endpoint: it presents h on
// every request (none when h is the zero Header) over base
// (http.DefaultTransport when nil), sends requests to endpoint's origin
// only (ErrOtherOrigin), follows no redirect (ErrRedirect), and holds its
// responses to the budget of a WithResponseLimit context.
func HTTPClient(endpoint string, h Header, base http.RoundTripper) *http.Client {
	if base == nil {
		base = http.DefaultTransport
	}
	pinned := &originOnly{h: h, base: limitResponses{base: base}}
	if u, err := url.Parse(endpoint); err == nil {
		pinned.origin = origin(u)
	}
	return &http.Client{Transport: pinned, CheckRedirect: refuseRedirects}
}
