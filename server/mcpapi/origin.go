package mcpapi

// Origin validation (MCP streamable HTTP: servers MUST validate the Origin
// header and answer 403 when it is invalid). A browser sends Origin with
// every cross-origin request and with same-origin POSTs; agents, SDKs and
// curl send none. A page can reach a gateway on loopback or an internal
// network through DNS rebinding, under a host name of its own, so "same
// origin as the Host header" proves nothing. The rule:
//   - no Origin header: not a browser, served as before;
//   - an Origin listed in the policy (mcp.allowed_origins): served, with
//     CORS headers so that page can read the answers;
//   - the endpoint's own origin (ownOrigin): served, since only a page this
//     listener served could carry it, and it serves none;
//   - any other Origin, "null" (sandboxed frames, file: pages) and more than
//     one Origin header: 403 before authentication and before the body is
//     read, with a fixed message that does not repeat the origin.
//
// Neither net/http's CrossOriginProtection nor the SDK's (deprecated)
// StreamableHTTPOptions.CrossOriginProtection fits: they pass a request
// whose Origin matches its Host (the DNS-rebinding case), pass GET, and the
// SDK's runs after authentication and the body read. The SDK's own DNS
// rebinding check (a non-loopback Host on a loopback listener: 403) stays on.
//
// The RFC 9728 metadata document is not checked: it is public, carries no
// credentials, and browser-based clients read it cross-origin by design
// (resource_metadata.go sends Access-Control-Allow-Origin: *).

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/rs/cors"
)

// Origins is a set of browser origins allowed to call the MCP endpoint,
// each normalized (NormalizeOrigin). The zero value allows none.
type Origins struct{ set map[string]bool }

// ParseOrigins checks and normalizes list (the policy's
// mcp.allowed_origins). Errors name each bad entry by index.
func ParseOrigins(list []string) (Origins, error) {
	o := Origins{set: make(map[string]bool, len(list))}
	var errs []error
	for i, s := range list {
		n, err := NormalizeOrigin(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp.allowed_origins[%d] %q: %w", i, policy.Bound(s), err))
			continue
		}
		o.set[n] = true
	}
	return o, errors.Join(errs...)
}

// Allows reports whether the Origin header value origin is in the set.
func (o Origins) Allows(origin string) bool {
	n, err := NormalizeOrigin(origin)
	return err == nil && o.set[n]
}

// NormalizeOrigin is an origin as the set compares it: scheme://host[:port]
// with scheme and host in lower case and a default port (http 80, https
// 443) left out, as browsers serialize it. Wildcards, "null", user info,
// paths (even "/"), queries, fragments and non-ASCII hosts (browsers send
// the punycode form) are errors.
func NormalizeOrigin(s string) (string, error) {
	switch {
	case s == "null":
		return "", errors.New(`"null" is the origin of sandboxed and file: pages; it is never allowed`)
	case strings.Contains(s, "*"):
		return "", errors.New("wildcards are not supported: list each origin")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", errors.New("not a URL")
	}
	switch {
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return "", errors.New("must be scheme://host[:port]")
	case u.User != nil:
		return "", errors.New("must not carry user info")
	case u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("must be scheme://host[:port], without a path, query or fragment (not even a trailing /)")
	}
	host := strings.ToLower(u.Hostname())
	for _, r := range host {
		if r > 0x7f {
			return "", errors.New("write the host in its ASCII (punycode) form, as browsers send it")
		}
	}
	port := u.Port()
	if port != "" {
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return "", errors.New("port must be a number in 1..65535")
		}
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		return u.Scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") { // IPv6
		host = "[" + host + "]"
	}
	return u.Scheme + "://" + host, nil
}

// originGuard holds the allowed origins in force; policy reloads replace
// them (Server.SetAllowedOrigins).
type originGuard struct {
	allowed atomic.Pointer[Origins]
	cors    *cors.Cors
}

func newOriginGuard(o Origins) *originGuard {
	g := &originGuard{}
	g.allowed.Store(&o)
	g.cors = cors.New(cors.Options{
		AllowOriginFunc: func(origin string) bool { return g.allowed.Load().Allows(origin) },
		AllowedMethods:  []string{http.MethodPost, http.MethodGet, http.MethodDelete},
		// Credentials, protocol version, trace context, the MCP 2026-07-28
		// request headers: whatever the listed page's client sends.
		AllowedHeaders: []string{"*"},
		ExposedHeaders: []string{"Mcp-Session-Id", "WWW-Authenticate"},
		MaxAge:         600,
	})
	return g
}

// originRefused is the whole body of a refusal: the origin itself is not
// repeated (it is the caller's, of any length).
const originRefused = "origin not allowed"

// SetAllowedOrigins makes list the allowed browser origins from the next
// request on (a policy reload).
func (m *Server) SetAllowedOrigins(list []string) error {
	o, err := ParseOrigins(list)
	if err != nil {
		return err
	}
	m.origins.allowed.Store(&o)
	return nil
}

// checkOrigin refuses browser requests from origins not allowed (403,
// before authentication and before the body is read) and answers the
// CORS preflight of allowed ones.
func (m *Server) checkOrigin(next http.Handler) http.Handler {
	withCORS := m.origins.cors.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs := r.Header.Values("Origin")
		if len(vs) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if len(vs) > 1 || !(m.origins.allowed.Load().Allows(vs[0]) || ownOrigin(r, vs[0])) {
			m.refuseHTTP(w, r, originRefused, http.StatusForbidden, "origin-not-allowed")
			return
		}
		withCORS.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether origin is the endpoint's own:
// http://<the address the request arrived at>, or http://localhost:<port>
// when that address is loopback. A DNS-rebinding page cannot carry it (its
// origin names the attacker's host), and the listener serves no pages, so
// it is no foreign page; clients that send their target's own origin (the
// MCP conformance suite does) are served.
func ownOrigin(r *http.Request, origin string) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return false
	}
	n, err := NormalizeOrigin(origin)
	if err != nil {
		return false
	}
	port := strconv.Itoa(la.Port)
	if own, err := NormalizeOrigin("http://" + net.JoinHostPort(la.IP.String(), port)); err == nil && n == own {
		return true
	}
	return la.IP.IsLoopback() && n == "http://localhost:"+port
}
