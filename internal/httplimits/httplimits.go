// Package httplimits bounds an HTTP listener's connections: how long a
// client may take to send a request's headers and body, to take each write
// of a response, how long a keep-alive connection may sit idle, and how
// many connections are served at once. The MCP endpoint and the admin
// listener are bounded by the same Limits.
package httplimits

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound an HTTP server's connections. Zero fields take the defaults
// below.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, from the end of its
	// headers (the server applies it per request: mcpapi's readBody).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response (applied per write:
	// mcpapi's writeDeadlines); a client that does not read is cut off.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxConnections caps the connections served at once; more wait to be
	// accepted.
	MaxConnections int
}

// The defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConnections    = 1024
)

// Defaults are the default Limits.
func Defaults() Limits {
	return Limits{ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadTimeout: DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout, MaxConnections: DefaultMaxConnections}
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	d := Defaults()
	for _, f := range []struct{ v, def *time.Duration }{{&l.ReadHeaderTimeout, &d.ReadHeaderTimeout},
		{&l.ReadTimeout, &d.ReadTimeout}, {&l.WriteTimeout, &d.WriteTimeout}, {&l.IdleTimeout, &d.IdleTimeout}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = d.MaxConnections
	}
	return l
}

// Validate names every negative field; listener prefixes each message
// (e.g. "mcp").
func (l Limits) Validate(listener string) error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read_header_timeout", l.ReadHeaderTimeout}, {"read_timeout", l.ReadTimeout}, {"write_timeout", l.WriteTimeout}, {"idle_timeout", l.IdleTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s must not be negative, got %v", listener, d.name, d.v))
		}
	}
	if l.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("%s max_connections must not be negative, got %d", listener, l.MaxConnections))
	}
	return errors.Join(errs...)
}

// Apply sets hs's header-read and idle timeouts from l (with defaults).
// It leaves http.Server's ReadTimeout and WriteTimeout alone: they are
// fixed from a request's start, so a server whose calls or streams may
// outlast them applies l's per request instead.
func (l Limits) Apply(hs *http.Server) {
	l = l.WithDefaults()
	hs.ReadHeaderTimeout, hs.IdleTimeout = l.ReadHeaderTimeout, l.IdleTimeout
}

// Serve serves hs on lis with at most MaxConnections connections at once:
// over the cap, connections wait in the listen backlog until one closes.
// It returns nil after a Shutdown or Close.
func (l Limits) Serve(hs *http.Server, lis net.Listener) error {
	l = l.WithDefaults()
	if err := hs.Serve(netutil.LimitListener(lis, l.MaxConnections)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
