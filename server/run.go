package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// Server is the gateway's gRPC server over a started registry: the
// ToolGatewayService with its interceptor chain, the ToolRegistryService
// (writes go to the registry's store), health and reflection.
// Run uses it; tests use it directly with their own listener.
type Server struct {
	gs     *grpc.Server
	health *health.Server
	pool   *backendPool
	pipe   *pipeline
	rs     *registryService

	// Policy, metrics, tracing and the admin listener (policy.go, metrics.go,
	// tracing.go, admin.go).
	metrics     *metrics
	tracing     *tracing
	ready       atomic.Bool
	stopping    atomic.Bool
	adminMu     sync.Mutex
	admin       []*http.Server
	adminClosed bool

	stopPrune chan struct{}
	pruneDone chan struct{}
	stopOnce  sync.Once
}

// New builds a Server over reg, which must already be started (loaded): the
// health service reports SERVING from the start, so SERVING always follows
// the registry's first load (Run starts the registry before calling New).
func New(cfg Config, reg *registry.Registry) (*Server, error) {
	if err := cfg.validateServer(); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("server: nil registry")
	}
	log := cfg.logger()
	pool := newBackendPool(&cfg)
	p := &pipeline{reg: reg, pool: pool, defaultTimeout: cfg.DefaultTimeout}
	m := newMetrics()
	creds, err := cfg.Policy.TLS.serverCredentials()
	if err != nil {
		return nil, err
	}
	tr, err := newTracing(context.Background(), cfg.Policy.Tracing, cfg.Policy.Tracing.Provider)
	if err != nil {
		return nil, err
	}
	if err := p.policyState.init(context.Background(), &cfg.Policy, m, log); err != nil {
		tr.shutdown(context.Background())
		return nil, fmt.Errorf("config: policy: %w", err)
	}
	if p.auth.Off() {
		log.Warn("authentication is off: every caller is anonymous and holds the anonymous roles; set auth.mode: on in a policy file for any shared deployment")
	}
	sopts := []grpc.ServerOption{}
	if creds != nil {
		sopts = append(sopts, grpc.Creds(creds))
	}
	// Tracing off: no stats handlers (forward.go copies the trace headers).
	p.otelPropagates = tr.on
	if tr.on {
		pool.dialOpts = append(pool.dialOpts, grpc.WithStatsHandler(tr.clientHandler()))
		sopts = append(sopts, grpc.StatsHandler(tr.serverHandler()))
	}
	gs := grpc.NewServer(append(sopts,
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgSize),
		// One interceptor: chainUnary composes the chain with one small
		// allocation per call where gRPC's chaining makes a closure per level.
		grpc.UnaryInterceptor(chainUnary(unaryChain(p, log)...)),
		grpc.ChainStreamInterceptor(streamChain(p, log)...),
		rawServerOption(), // InvokeTool requests arrive undecoded (rawpath.go)
		grpc.NumStreamWorkers(streamWorkers()),
	)...)
	gs.RegisterService(&rawGatewayServiceDesc, &gatewayService{p: p})
	rs := registerRegistryService(gs, reg, WithStrictLint(cfg.StrictLint), WithToolFilter(p.visibleTool))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(gatewayv1.ToolGatewayService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(gatewayv1.ToolRegistryService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)

	m.grpc.InitializeMetrics(gs)
	s := &Server{gs: gs, health: hs, pool: pool, pipe: p, rs: rs, metrics: m, tracing: tr,
		stopPrune: make(chan struct{}), pruneDone: make(chan struct{})}
	go s.pruneLoop(reg)
	return s, nil
}

// pruneLoop closes backend connections no registered tool uses any more,
// each time the registry changes.
func (s *Server) pruneLoop(reg *registry.Registry) {
	defer close(s.pruneDone)
	changes, unsubscribe := reg.Changes()
	defer unsubscribe()
	for {
		select {
		case <-s.stopPrune:
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			inUse := map[string]bool{}
			entries := reg.Snapshot().List()
			for _, e := range entries {
				inUse[e.Tool.Backend] = true
			}
			s.pool.retain(func(target string) bool { return inUse[target] })
			s.pipe.pruneRedactors(entries)
		}
	}
}

// Serve accepts connections on lis until Shutdown; it returns nil after a
// Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	// Ready: the registry was loaded before New, and now gRPC serves.
	// Shutdown clears it (and a Serve after Shutdown must not set it).
	if !s.stopping.Load() {
		s.ready.Store(true)
	}
	if err := s.gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Shutdown stops accepting calls (health turns NOT_SERVING), lets in-flight
// calls finish until ctx is done, then cuts off the rest, and closes the
// backend connections. It returns ctx's error if calls had to be cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	s.ready.Store(false) // /readyz answers 503 while calls drain
	s.health.Shutdown()
	s.rs.Close() // WatchTools streams never end on their own; GracefulStop would wait for them
	drained := make(chan struct{})
	go func() { s.gs.GracefulStop(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		s.gs.Stop()
		<-drained
		err = ctx.Err()
	}
	s.stopOnce.Do(func() { close(s.stopPrune) })
	<-s.pruneDone
	s.pool.close()
	s.closeAdmin(ctx)
	if cerr := s.pipe.policyState.close(); cerr != nil {
		s.pipe.log.Warn("closing the audit log", "error", cerr.Error())
	}
	s.tracing.shutdown(ctx)
	return err
}

// Run starts the gateway and blocks until ctx is done (e.g. SIGINT/SIGTERM),
// then shuts down gracefully within cfg.ShutdownGrace. A bad tools file or
// an address already in use stops start-up with an error naming the problem.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.logger()

	var tools []registry.Tool
	var demoAddr string
	if cfg.Demo {
		addr, stop, err := startDemoBackend(log)
		if err != nil {
			return fmt.Errorf("starting the example tool service: %w", err)
		}
		defer stop()
		demoAddr = addr
		demo, err := registry.ParseTools(demotools.ToolsYAML(addr), "embedded demo tools")
		if err != nil {
			return err
		}
		tools = append(tools, demo...)
	}
	if cfg.ToolsFile != "" {
		fileTools, err := registry.LoadFile(cfg.ToolsFile)
		if err != nil {
			return err
		}
		tools = append(tools, fileTools...)
	}

	store, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("registry store opened", "store", cfg.Store.String())
	reg := registry.New(store, registry.WithLogger(log))
	if err := startRegistry(ctx, store, reg, tools, log); errors.Is(err, errStoppedWaiting) {
		return nil
	} else if err != nil {
		return err
	}
	defer reg.Close()

	lis, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv, err := New(cfg, reg)
	if err != nil {
		lis.Close()
		return err
	}
	if a := cfg.Policy.Admin.ListenAddr; a != "" {
		alis, err := net.Listen("tcp", a)
		if err != nil {
			lis.Close()
			srv.Shutdown(context.Background())
			return fmt.Errorf("admin listener (/metrics, /healthz, /readyz): %w", err)
		}
		log.Info("admin endpoints serving", "addr", alis.Addr().String())
		go func() {
			if err := srv.ServeAdmin(alis); err != nil {
				log.Error("admin listener failed", "error", err.Error())
			}
		}()
	}
	// The store may hold more than was seeded (tools registered earlier).
	entries := reg.Snapshot().List()
	if cfg.Out != nil {
		registered := make([]registry.Tool, len(entries))
		for i, e := range entries {
			registered[i] = e.Tool
		}
		printBanner(cfg.Out, dialAddr(lis.Addr()), registered, demoAddr)
	}
	// The MCP endpoint (mcp.go), if configured: same registry, same pipeline.
	mcpSrv, err := startMCP(cfg, srv, reg, log)
	if err != nil {
		lis.Close()
		srv.Shutdown(context.Background())
		return err
	}
	log.Info("gateway serving", "addr", lis.Addr().String(), "tools", len(entries))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served: // the listener failed
		mcpSrv.stop(context.Background())
		srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining calls in flight", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	mcpSrv.stop(sctx) // first: MCP calls use the gateway's backend connections
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown grace ran out; remaining calls were cut off", "grace", cfg.ShutdownGrace)
	}
	return <-served
}

// errStoppedWaiting ends Run without an error: it was asked to stop while
// it waited for the registry store.
var errStoppedWaiting = errors.New("stopped while waiting for the registry store")

// storeRetry is how long startRegistry waits between attempts: the first
// wait, doubled each time up to the cap.
var storeRetry = [2]time.Duration{250 * time.Millisecond, 10 * time.Second}

// startRegistry seeds the store with the start-up tools and starts the
// registry. While the store is unreachable (etcd down: ErrUnavailable) it
// waits and tries again, logging each attempt, until ctx ends — rather
// than exiting: a fleet restarting during an etcd outage then comes back by
// itself within seconds of etcd, not after an orchestrator's crash-loop
// back-off. Any other error (a bad tool, a corrupt file) stops start-up.
func startRegistry(ctx context.Context, store registry.Store, reg *registry.Registry, tools []registry.Tool, log *slog.Logger) error {
	wait := storeRetry[0]
	for {
		err := registry.Seed(ctx, store, tools)
		if err != nil {
			err = fmt.Errorf("loading tools: %w", err)
		} else if err = reg.Start(ctx); err != nil {
			err = fmt.Errorf("starting the registry: %w", err)
		}
		if err == nil || !errors.Is(err, registry.ErrUnavailable) {
			return err
		}
		log.Warn("registry store unreachable; not serving until it answers", "error", err.Error(), "retry_in", wait)
		select {
		case <-ctx.Done(): // shut down while waiting: a normal stop
			log.Info("stopped before the registry store answered")
			return errStoppedWaiting
		case <-time.After(wait):
		}
		wait = min(2*wait, storeRetry[1])
	}
}

// startDemoBackend serves the example tool service on a random loopback port.
func startDemoBackend(log *slog.Logger) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	gs := demotools.NewGRPCServer(demotools.New(), log.With("component", "example-tools"))
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	return lis.Addr().String(), func() { gs.Stop(); <-done }, nil
}

// dialAddr turns a listen address into one a client on this host can dial.
func dialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// DemoCallArgs are the arguments of the banner's example call: a title
// escaped twice and tags sent as a JSON string, both repaired by RT-TOOL-8.
const DemoCallArgs = `{"title":"Ember &amp;amp; Oak","tags":"[\"a\",\"b\"]"}`

func printBanner(w io.Writer, addr string, tools []registry.Tool, demoAddr string) {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	fmt.Fprintf(w, "flowdrop gateway listening on %s (plaintext gRPC; health and reflection enabled)\n", addr)
	if demoAddr != "" {
		fmt.Fprintf(w, "example tool service running in-process on %s\n", demoAddr)
	}
	fmt.Fprintf(w, "tools: %s\n", strings.Join(names, ", "))
	// The demo call when create_note is there (the demo tools, or a file
	// printed by cmd/example-tools); else the first tool with no arguments.
	tool, args := "create_note", DemoCallArgs
	if !slices.Contains(names, tool) && len(names) > 0 {
		tool, args = names[0], `{}`
	}
	fmt.Fprintf(w, "\ntry it:\n  grpcurl -plaintext -d '{\"tool\":%q,\"arguments\":%s}' %s %s/InvokeTool\n",
		tool, args, addr, gatewayv1.ToolGatewayService_ServiceDesc.ServiceName)
	fmt.Fprintf(w, "  go run ./cmd/flowdropctl invoke %s --addr %s --args '%s'\n\n", tool, addr, args)
}
