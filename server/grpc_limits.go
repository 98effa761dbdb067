package server

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/flowdrop/gateway/server/grpcapi"
)

// GRPCLimits bound what a peer of the gRPC listener can make the gateway
// hold: streams per connection, the bytes buffered for them, headers, and
// how long a handshake, an idle connection or — before the peer is
// authenticated — a request message may take. Calls without acceptable
// credentials are refused on their headers, before any of their message
// is read (grpcapi/tap.go); these bounds are what is left. Zero fields
// take the defaults below.
type GRPCLimits struct {
	// MaxConcurrentStreams caps the streams of one connection (HTTP/2
	// SETTINGS_MAX_CONCURRENT_STREAMS; more are refused).
	MaxConcurrentStreams uint32
	// MaxUnauthenticatedStreams caps, per connection, the streams let
	// through before authentication: health, reflection, and a JWT whose
	// signing key is not cached yet. Each may hold up to MaxRecvMsgSize
	// while its message arrives.
	MaxUnauthenticatedStreams int
	// UnauthenticatedReceiveTimeout is how long such a stream's message
	// may take to arrive; past it the stream is cancelled.
	UnauthenticatedReceiveTimeout time.Duration
	// StreamWindow and ConnWindow are the static HTTP/2 flow-control
	// windows (bytes, at least 65535): what a peer may send on a stream,
	// and on the connection, that the gateway has not asked for. Dynamic
	// (BDP) windows would let a peer grow them to 16 MiB a stream.
	StreamWindow int32
	ConnWindow   int32
	// MaxHeaderBytes caps a request's header list (HPACK-decoded size).
	MaxHeaderBytes uint32
	// HandshakeTimeout bounds a new connection's TLS handshake and HTTP/2
	// preface.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no stream for this long
	// (GOAWAY: clients reconnect on their next call).
	IdleTimeout time.Duration
	// KeepaliveTime and KeepaliveTimeout: after KeepaliveTime without
	// activity the gateway pings the peer, and closes the connection if
	// no answer comes within KeepaliveTimeout (a vanished peer's streams
	// are released).
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration
}

// The defaults of GRPCLimits.
const (
	DefaultGRPCMaxConcurrentStreams          = 100
	DefaultGRPCMaxUnauthenticatedStreams     = grpcapi.DefaultPreAuthMaxStreams
	DefaultGRPCUnauthenticatedReceiveTimeout = grpcapi.DefaultPreAuthReceiveTimeout
	DefaultGRPCStreamWindow                  = 64 << 10
	DefaultGRPCConnWindow                    = 1 << 20
	DefaultGRPCMaxHeaderBytes                = 64 << 10
	DefaultGRPCHandshakeTimeout              = 10 * time.Second
	DefaultGRPCIdleTimeout                   = 5 * time.Minute
	DefaultGRPCKeepaliveTime                 = time.Minute
	DefaultGRPCKeepaliveTimeout              = 20 * time.Second
)

// DefaultGRPCLimits are the gRPC listener's bounds by default.
func DefaultGRPCLimits() GRPCLimits {
	return GRPCLimits{
		MaxConcurrentStreams:          DefaultGRPCMaxConcurrentStreams,
		MaxUnauthenticatedStreams:     DefaultGRPCMaxUnauthenticatedStreams,
		UnauthenticatedReceiveTimeout: DefaultGRPCUnauthenticatedReceiveTimeout,
		StreamWindow:                  DefaultGRPCStreamWindow,
		ConnWindow:                    DefaultGRPCConnWindow,
		MaxHeaderBytes:                DefaultGRPCMaxHeaderBytes,
		HandshakeTimeout:              DefaultGRPCHandshakeTimeout,
		IdleTimeout:                   DefaultGRPCIdleTimeout,
		KeepaliveTime:                 DefaultGRPCKeepaliveTime,
		KeepaliveTimeout:              DefaultGRPCKeepaliveTimeout,
	}
}

// minWindow is HTTP/2's initial window; gRPC ignores smaller settings.
const minWindow = 65535

// withDefaults fills the zero fields.
func (l GRPCLimits) withDefaults() GRPCLimits {
	d := DefaultGRPCLimits()
	if l.MaxConcurrentStreams == 0 {
		l.MaxConcurrentStreams = d.MaxConcurrentStreams
	}
	if l.MaxUnauthenticatedStreams == 0 {
		l.MaxUnauthenticatedStreams = d.MaxUnauthenticatedStreams
	}
	if l.StreamWindow == 0 {
		l.StreamWindow = d.StreamWindow
	}
	if l.ConnWindow == 0 {
		l.ConnWindow = d.ConnWindow
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	for _, f := range []struct{ v, def *time.Duration }{{&l.UnauthenticatedReceiveTimeout, &d.UnauthenticatedReceiveTimeout},
		{&l.HandshakeTimeout, &d.HandshakeTimeout}, {&l.IdleTimeout, &d.IdleTimeout},
		{&l.KeepaliveTime, &d.KeepaliveTime}, {&l.KeepaliveTimeout, &d.KeepaliveTimeout}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return l
}

// validate names every field out of range (zero fields take the defaults).
func (l GRPCLimits) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("grpc "+format, args...)) }
	if l.MaxUnauthenticatedStreams < 0 {
		bad("max_unauthenticated_streams must not be negative, got %d", l.MaxUnauthenticatedStreams)
	}
	for _, w := range []struct {
		name string
		v    int32
	}{{"stream_window", l.StreamWindow}, {"conn_window", l.ConnWindow}} {
		if w.v != 0 && w.v < minWindow {
			bad("%s must be at least %d bytes, got %d", w.name, minWindow, w.v)
		}
	}
	if l.MaxHeaderBytes != 0 && l.MaxHeaderBytes < 4<<10 {
		bad("max_header_bytes must be at least 4096, got %d", l.MaxHeaderBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"unauthenticated_receive_timeout", l.UnauthenticatedReceiveTimeout}, {"handshake_timeout", l.HandshakeTimeout},
		{"idle_timeout", l.IdleTimeout}, {"keepalive_time", l.KeepaliveTime}, {"keepalive_timeout", l.KeepaliveTimeout}} {
		if d.v < 0 {
			bad("%s must not be negative, got %v", d.name, d.v)
		}
	}
	return errors.Join(errs...)
}

// serverOptions are the transport options l sets.
func (l GRPCLimits) serverOptions() []grpc.ServerOption {
	l = l.withDefaults()
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(l.MaxConcurrentStreams),
		grpc.StaticStreamWindowSize(l.StreamWindow),
		grpc.StaticConnWindowSize(l.ConnWindow),
		grpc.MaxHeaderListSize(l.MaxHeaderBytes),
		grpc.ConnectionTimeout(l.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.IdleTimeout,
			Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout}),
	}
}

// preAuth is the tap's share of l.
func (l GRPCLimits) preAuth() grpcapi.PreAuthBounds {
	l = l.withDefaults()
	return grpcapi.PreAuthBounds{MaxStreams: l.MaxUnauthenticatedStreams, ReceiveTimeout: l.UnauthenticatedReceiveTimeout}
}
