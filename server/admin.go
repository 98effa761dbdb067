package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The admin HTTP listener: /metrics (Prometheus), /healthz (the process
// runs) and /readyz (the registry is loaded and gRPC is serving; 503 once
// shutdown starts, so a load balancer drains the gateway first).

func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// ServeAdmin serves the admin endpoints on lis until Shutdown; it returns
// nil after a Shutdown.
func (s *Server) ServeAdmin(lis net.Listener) error {
	hs := &http.Server{Handler: s.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
	s.adminMu.Lock()
	if s.adminClosed {
		s.adminMu.Unlock()
		lis.Close()
		return nil
	}
	s.admin = append(s.admin, hs)
	s.adminMu.Unlock()
	if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// closeAdmin stops the admin listeners (after the gRPC server drained, so
// /readyz answered 503 meanwhile).
func (s *Server) closeAdmin(ctx context.Context) {
	s.adminMu.Lock()
	s.adminClosed = true
	admin := s.admin
	s.admin = nil
	s.adminMu.Unlock()
	for _, hs := range admin {
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
	}
}
