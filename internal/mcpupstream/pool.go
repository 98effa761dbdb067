package mcpupstream

import "net/http"

// DefaultIdleConnsPerUpstream is how many idle connections to one upstream
// a session's transport keeps (PooledTransport). net/http's default of 2
// makes every call beyond the second concurrent one open a new TCP (and
// TLS) connection and close it after; this is enough for a few dozen calls
// in flight to one upstream, an idle connection costing a descriptor.
const DefaultIdleConnsPerUpstream = 64

// PooledTransport is a copy of base (http.DefaultTransport when nil) that
// keeps up to idle idle connections to its upstream
// (DefaultIdleConnsPerUpstream when idle <= 0). One per upstream: its pool
// is the upstream's alone, and closing it (CloseIdleConnections) when the
// upstream is no longer used leaves no connection behind.
func PooledTransport(base *http.Transport, idle int) *http.Transport {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	if idle <= 0 {
		idle = DefaultIdleConnsPerUpstream
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = idle
	t.MaxIdleConns = idle
	return t
}
