package observe

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/internal/httplimits"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Admin is the admin HTTP listener: /metrics (Prometheus), /healthz (the
// process runs) and /readyz (200 while ready reports nil: the registry is
// loaded and gRPC is serving; 503 with ready's reason otherwise — while the
// registry store is waited for at start-up, once shutdown starts, so a load
// balancer drains the gateway first, and while fail-closed audit cannot
// write). It is served before the gateway waits for its store, so a
// liveness probe does not kill a replica that is waiting to recover.
type Admin struct {
	handler http.Handler
	mux     *http.ServeMux
	status  atomic.Pointer[func() Status] // the status page's source (status.go)
	jwks    atomic.Pointer[func() []byte] // the gateway-signed mode's public keys (SetJWKS)

	mu      sync.Mutex
	servers []*http.Server
	closed  bool
}

// NewAdmin serves m's metrics and asks ready for /readyz (its error is the
// reason in the 503 body: it must name no path or secret); about, if not
// nil, adds lines to a ready answer's body (the policy in force).
func NewAdmin(m *Metrics, ready func() error, about func() string) *Admin {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		body := "ready\nversion " + buildinfo.Read().String() + "\n"
		if about != nil {
			body += about()
		}
		w.Write([]byte(body))
	})
	a := &Admin{handler: mux, mux: mux}
	mux.HandleFunc("GET /{$}", a.serveStatus)
	mux.HandleFunc("GET "+JWKSPath, a.serveJWKS)
	return a
}

// Handle serves h for pattern beside the admin endpoints (the console,
// server/console, which authenticates its own requests).
func (a *Admin) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// JWKSPath is where the admin listener publishes the public keys of the
// tokens the gateway signs for backends (upstream_identity.signing).
const JWKSPath = "/.well-known/jwks.json"

// SetJWKS sets the source of JWKSPath's answer: a JWK Set, or nil when no
// signing key is configured (404).
func (a *Admin) SetJWKS(f func() []byte) { a.jwks.Store(&f) }

func (a *Admin) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	var set []byte
	if f := a.jwks.Load(); f != nil {
		set = (*f)()
	}
	if set == nil {
		http.Error(w, "no signing keys: upstream_identity.signing is not configured", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	// Verifiers refetch on an unknown kid; a short cache keeps a rotation
	// (a key added, then signing) visible within the overlap.
	w.Header().Set("Cache-Control", "max-age=60")
	w.Write(set)
}

// Serve serves the admin endpoints on lis until Close, bounded by l (its
// header timeout, idle timeout and connection cap: an admin response is
// small and written at once); it returns nil after a Close.
func (a *Admin) Serve(lis net.Listener, l httplimits.Limits) error {
	hs := &http.Server{Handler: a.handler}
	l.Apply(hs)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		lis.Close()
		return nil
	}
	a.servers = append(a.servers, hs)
	a.mu.Unlock()
	return l.Serve(hs, lis)
}

// Close stops the admin listeners within ctx.
func (a *Admin) Close(ctx context.Context) {
	a.mu.Lock()
	a.closed = true
	servers := a.servers
	a.servers = nil
	a.mu.Unlock()
	for _, hs := range servers {
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
	}
}
