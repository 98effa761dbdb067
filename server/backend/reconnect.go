package backend

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
)

// DefaultReconnectMaxDelay caps the wait between connection attempts to a
// backend that went away. gRPC's own default (120 s, reached after a few
// minutes down) leaves a backend that is back refused for up to that long;
// a second keeps a restarted backend's outage within about a second of its
// own while costing a down backend one failed connect a second per replica.
const DefaultReconnectMaxDelay = time.Second

// minConnectTimeout is the least time one connection attempt is given. Long
// enough for a TCP + TLS handshake across a slow network; short enough that
// a black-holed attempt does not hold the next one back for gRPC's default
// 20 s.
const minConnectTimeout = 5 * time.Second

// Reconnect on demand: a call that finds its backend's connection in
// TRANSIENT_FAILURE asks for an attempt now (at most once per
// kickInterval per connection) and waits for it up to kickWait, within its
// own deadline. A backend that came back is then reached by the first call
// after it, not by the next back-off tick.
const (
	kickInterval = 100 * time.Millisecond
	kickWait     = 250 * time.Millisecond
)

// ConnectParams bounds the reconnect back-off (grpc.WithConnectParams):
// gRPC's base, multiplier and jitter, a max delay of maxDelay (<= 0:
// DefaultReconnectMaxDelay), each attempt given at least 5 s. The gateway's
// etcd client dials with it too, so the registry store comes back as fast
// as a backend does.
func ConnectParams(maxDelay time.Duration) grpc.DialOption {
	if maxDelay <= 0 {
		maxDelay = DefaultReconnectMaxDelay
	}
	b := backoff.DefaultConfig
	b.MaxDelay = maxDelay
	b.BaseDelay = min(b.BaseDelay, maxDelay)
	return grpc.WithConnectParams(grpc.ConnectParams{Backoff: b, MinConnectTimeout: minConnectTimeout})
}

// reconnectIfFailed is the on-demand reconnect described above. It costs a
// call on a healthy connection one state read.
func (c *pooledConn) reconnectIfFailed(ctx context.Context) {
	if c.cc.GetState() != connectivity.TransientFailure {
		return
	}
	now := time.Now().UnixNano()
	last := c.lastKick.Load()
	if now-last < int64(kickInterval) || !c.lastKick.CompareAndSwap(last, now) {
		return // another call asked just now; this one fails fast as before
	}
	c.cc.ResetConnectBackoff()
	ctx, cancel := context.WithTimeout(ctx, kickWait)
	defer cancel()
	// While the attempt runs the channel stays in TRANSIENT_FAILURE (gRPC's
	// pick_first reports failure until a connection is ready), so this
	// returns on READY, on shutdown, or when the wait is over.
	for s := c.cc.GetState(); s != connectivity.Ready && s != connectivity.Shutdown; s = c.cc.GetState() {
		if !c.cc.WaitForStateChange(ctx, s) {
			return
		}
	}
}
