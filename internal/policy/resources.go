package policy

import (
	"fmt"
	"strings"
)

// URIAccess lists the resource URIs a caller may list and read through
// the MCP face, as URI globs over the gateway's resource URIs
// (flowdrop-mcp://PREFIX/UPSTREAM-URI, server/mcpapi): "*" matches any run
// of characters, "/" included, "?" any one character; nothing else is
// special. A URI must match an Allow pattern and no Deny pattern: deny
// wins. An empty Allow list allows no resource (fail closed): resources
// are opened to a caller explicitly, beside its tools.
type URIAccess struct {
	Allow []string
	Deny  []string
}

// maxURIPattern bounds one URI pattern (the matcher is O(len×len)).
const maxURIPattern = 1024

// checkURIPatterns refuses an empty or oversized pattern, at load.
func checkURIPatterns(who string, ua URIAccess) error {
	for _, p := range append(append([]string(nil), ua.Allow...), ua.Deny...) {
		if p == "" {
			return fmt.Errorf("authz: %s: resources: an empty URI pattern matches nothing; remove it", who)
		}
		if len(p) > maxURIPattern {
			return fmt.Errorf("authz: %s: resources: URI pattern of %d bytes is over %d", who, len(p), maxURIPattern)
		}
		if strings.ContainsAny(p, "\x00\r\n") {
			return fmt.Errorf("authz: %s: resources: URI pattern %q holds a control character", who, Bound(p))
		}
	}
	return nil
}

// AllowResource checks the caller's resource allow and deny lists
// (enforced; a shadow entry is not consulted: the caller has the default's).
func (a *Authorizer) AllowResource(c Caller, uri string) error {
	ta, ok := a.callers[c.Subject]
	if !ok {
		ta = a.def
	}
	if matchAnyURI(ta.Resources.Deny, uri) {
		return &Error{Code: PermissionDenied, Reason: ReasonToolDenied, Tool: uri,
			Message: fmt.Sprintf("resource %q is denied for caller %q", Bound(uri), c.Subject)}
	}
	if !matchAnyURI(ta.Resources.Allow, uri) {
		return &Error{Code: PermissionDenied, Reason: ReasonToolNotAllowed, Tool: uri,
			Message: fmt.Sprintf("resource %q is not in the resource allow list of caller %q", Bound(uri), c.Subject)}
	}
	return nil
}

// MayListResources reports whether the caller's resource allow list is
// not empty (a caller without one is not offered resources at all).
func (a *Authorizer) MayListResources(c Caller) bool {
	ta, ok := a.callers[c.Subject]
	if !ok {
		ta = a.def
	}
	return len(ta.Resources.Allow) > 0
}

func matchAnyURI(patterns []string, uri string) bool {
	for _, p := range patterns {
		if matchURI(p, uri) {
			return true
		}
	}
	return false
}

// matchURI matches uri against the glob p ("*": any run, "?": one byte),
// iteratively with one backtrack point, so its work is bounded by
// len(p)×len(uri) whatever the pattern.
func matchURI(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
