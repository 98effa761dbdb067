package backend

import (
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
)

// backendPool holds one *grpc.ClientConn per backend target. A connection
// is created on first use (grpc.NewClient does not dial until a call needs
// it), shared by every call to that target, and closed once no registered
// tool uses the target any more and its in-flight calls have finished.
type backendPool struct {
	dialOpts []grpc.DialOption

	mu     sync.RWMutex
	conns  map[string]*pooledConn
	closed bool
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
}

func (c *pooledConn) close() { c.closeOnce.Do(func() { c.cc.Close() }) }

func (c *pooledConn) release() {
	if c.refs.Add(-1) == 0 && c.retired.Load() {
		c.close()
	}
}

func newBackendPool(dialOpts []grpc.DialOption) *backendPool {
	return &backendPool{conns: map[string]*pooledConn{}, dialOpts: dialOpts}
}

// errPoolClosed is returned by get after close.
var errPoolClosed = fmt.Errorf("gateway is shutting down")

// get returns the connection for target, creating it if needed; the caller
// must call its release when its call is done (a method, not a returned
// func: a method value would allocate on every call).
func (p *backendPool) get(target string) (*pooledConn, error) {
	p.mu.RLock()
	c, ok := p.conns[target]
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
	if c, ok = p.conns[target]; !ok {
		cc, err := grpc.NewClient(target, p.dialOpts...)
		if err != nil {
			return nil, fmt.Errorf("bad backend target: %w", err)
		}
		c = &pooledConn{cc: cc}
		p.conns[target] = c
	}
	c.refs.Add(1)
	return c, nil
}

// retain closes the connections whose target inUse reports false (once
// their in-flight calls finish) and forgets them.
func (p *backendPool) retain(inUse func(target string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for target, c := range p.conns {
		if inUse(target) {
			continue
		}
		delete(p.conns, target)
		c.retired.Store(true)
		if c.refs.Load() == 0 {
			c.close()
		}
	}
}

// targets lists the targets with an open connection (for tests).
func (p *backendPool) targets() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.conns))
	for t := range p.conns {
		out = append(out, t)
	}
	return out
}

// close closes every connection; get fails afterwards. Calls still in
// flight on a closed connection fail, so close after the server drained.
func (p *backendPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for target, c := range p.conns {
		delete(p.conns, target)
		c.close()
	}
}
