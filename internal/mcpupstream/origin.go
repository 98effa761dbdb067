package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is the error of a request an upstream answered with a
// redirect. Sessions follow none: a redirect re-sends the request — its
// arguments, and the credential the transport adds to every request — to
// wherever the upstream points, and a same-origin one can walk a call out
// of the configured endpoint's path.
var ErrRedirect = errors.New("the upstream answered with a redirect, which is not followed")

// ErrOtherOrigin is the error of a request to another origin (scheme, host
// and port) than the endpoint's: the transport sends it nowhere, so neither
// the credential nor the request's body leaves for another origin, however
// the request came to be made.
var ErrOtherOrigin = errors.New("a request to another origin than the upstream's is not sent")

// refuseRedirects is the sessions' CheckRedirect.
func refuseRedirects(req *http.Request, _ []*http.Request) error {
	if req.Response != nil {
		return fmt.Errorf("%w (HTTP %d)", ErrRedirect, req.Response.StatusCode)
	}
	return ErrRedirect
}

// origin is u's scheme, host and port, lower-cased and the port explicit
// ("http://example.com:80"); "" when u has no scheme or host.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if scheme == "" || host == "" {
		return ""
	}
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// originOnly sends only requests to one origin, adding the credential
// header h (none when zero) to each; any other request fails with
// ErrOtherOrigin unsent. It is the last layer before the network, so it
// holds even if a redirect were followed above it.
type originOnly struct {
	origin string // "" when the endpoint did not parse: nothing is sent
	h      Header
	base   http.RoundTripper
}

func (o *originOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if o.origin == "" || origin(req.URL) != o.origin {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, ErrOtherOrigin
	}
	call, perCall := req.Context().Value(headerKey{}).(Header)
	if o.h.Name == "" && !perCall {
		return o.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	if o.h.Name != "" {
		req.Header.Set(o.h.Name, o.h.Value)
	}
	if perCall {
		req.Header.Set(call.Name, call.Value) // the call's own identity wins over the session's
	}
	return o.base.RoundTrip(req)
}

type headerKey struct{}

// WithHeader is ctx whose requests carry h besides (or instead of, for the
// same name) the session's credential: one call's identity (a caller's
// token), sent with that call's requests only and, as the session's
// credential, only to the endpoint's origin.
func WithHeader(ctx context.Context, h Header) context.Context {
	return context.WithValue(ctx, headerKey{}, h)
}
