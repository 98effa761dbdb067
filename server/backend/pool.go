package backend

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/flowdrop/gateway/registry"
)

// backendPool holds one *grpc.ClientConn per backend target and transport
// security: two tools with different TLS settings to one target get
// different connections. A connection is created on first use
// (grpc.NewClient does not dial until a call needs it; the TLS files are
// read then), shared by every call with the same key, and closed once no
// registered tool uses the target any more and its in-flight calls have
// finished.
type backendPool struct {
	dialOpts []grpc.DialOption
	// targetTLS is the per-target transport security, for keys whose tool
	// sets none (transportFor).
	targetTLS []TargetTLS
	// eject is outlier ejection for balanced targets (Threshold 0: off);
	// log hears ejections.
	eject EjectionConfig
	log   *slog.Logger

	mu     sync.RWMutex
	conns  map[poolKey]*pooledConn
	closed bool
}

// poolKey is a connection's identity: comparable, so a lookup allocates
// nothing. tls is the tool's own setting (zero when it has none; the
// per-target settings then apply, fixed for the pool's life).
type poolKey struct {
	target string
	tls    registry.TransportSecurity
}

type pooledConn struct {
	cc *grpc.ClientConn
	// refs counts calls using cc; retired is set when the target left the
	// registry. Whichever of prune and the last release sees both "retired"
	// and "no refs" closes cc (once).
	refs      atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
	// lastKick is when a call last asked for a reconnect (unix ns; see
	// reconnectIfFailed).
	lastKick atomic.Int64
	// outliers is the ejection state of a balanced target (nil: none).
	outliers *outliers
}

func (c *pooledConn) close() {
	c.closeOnce.Do(func() {
		c.cc.Close()
		if c.outliers != nil {
			c.outliers.close()
		}
	})
}

func (c *pooledConn) release() {
	if c.refs.Add(-1) == 0 && c.retired.Load() {
		c.close()
	}
}

func newBackendPool(dialOpts []grpc.DialOption, targetTLS []TargetTLS, eject EjectionConfig, log *slog.Logger) *backendPool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &backendPool{conns: map[poolKey]*pooledConn{}, dialOpts: dialOpts, targetTLS: targetTLS, eject: eject, log: log}
}

// errPoolClosed is returned by get after close.
var errPoolClosed = fmt.Errorf("gateway is shutting down")

// get returns the connection for target with the tool's own transport
// security (nil: none), creating it if needed; the caller must call its
// release when its call is done (a method, not a returned func: a method
// value would allocate on every call). A TLS file that does not load is a
// *registry.TLSFileError and no connection: never plaintext instead.
func (p *backendPool) get(target string, own *registry.TransportSecurity) (*pooledConn, error) {
	key := poolKey{target: target}
	if own != nil {
		key.tls = *own
	}
	p.mu.RLock()
	c, ok := p.conns[key]
	if ok {
		c.refs.Add(1) // under the read lock, so prune cannot retire c in between
	}
	closed := p.closed
	p.mu.RUnlock()
	if ok {
		return c, nil
	}
	if closed {
		return nil, errPoolClosed
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	if c, ok = p.conns[key]; !ok {
		creds, err := transportCredentials(transportFor(target, key.tls, p.targetTLS))
		if err != nil {
			return nil, err
		}
		var o *outliers
		serviceConfig := ""
		if p.eject.Threshold > 0 && balanced(target) {
			o = newOutliers(p.eject, p.log, target)
			serviceConfig = o.serviceConfig()
		}
		opts := append(append([]grpc.DialOption{creds}, balanceOptions(target, serviceConfig)...), p.dialOpts...)
		cc, err := grpc.NewClient(target, opts...)
		if err != nil {
			if o != nil {
				o.close()
			}
			return nil, fmt.Errorf("bad backend target: %w", err)
		}
		c = &pooledConn{cc: cc, outliers: o}
		p.conns[key] = c
	}
	c.refs.Add(1)
	return c, nil
}

// retain closes the connections whose target inUse reports false (once
// their in-flight calls finish) and forgets them.
func (p *backendPool) retain(inUse func(target string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, c := range p.conns {
		if inUse(key.target) {
			continue
		}
		delete(p.conns, key)
		c.retired.Store(true)
		if c.refs.Load() == 0 {
			c.close()
		}
	}
}

// ejections returns the ejection counters of the connection to target
// with the tool's own transport security: all ejections so far and the
// addresses ejected now; ok is false without a balanced connection.
func (p *backendPool) ejections(target string, own *registry.TransportSecurity) (total uint64, ejected int, ok bool) {
	key := poolKey{target: target}
	if own != nil {
		key.tls = *own
	}
	p.mu.RLock()
	c := p.conns[key]
	p.mu.RUnlock()
	if c == nil || c.outliers == nil {
		return 0, 0, false
	}
	total, ejected = c.outliers.stats()
	return total, ejected, true
}

// targets lists the targets with an open connection, once each (for tests).
func (p *backendPool) targets() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.conns))
	for k := range p.conns {
		if !slices.Contains(out, k.target) {
			out = append(out, k.target)
		}
	}
	return out
}

// close closes every connection; get fails afterwards. Calls still in
// flight on a closed connection fail, so close after the server drained.
func (p *backendPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for key, c := range p.conns {
		delete(p.conns, key)
		c.close()
	}
}
