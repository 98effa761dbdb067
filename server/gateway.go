package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"google.golang.org/grpc"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/grpcapi"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/mcpfollow"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Gateway is a started gateway: the registry over its store, the pipeline,
// the gRPC face, and the MCP face and admin listener when configured.
type Gateway struct {
	log    *slog.Logger
	store  registry.Store
	reg    *registry.Registry
	pipe   *pipeline.Pipeline
	tools  *backend.ToolService
	kinds  *backend.Kinds      // the backend kinds over tools (the HTTP kind's idle connections, MCP upstream sessions)
	follow *mcpfollow.Follower // upstream MCP tools kept in step
	// stdio are the stdio MCP servers the policy declares (set up at start).
	stdio   map[string]mcpupstream.Command
	grpc    *grpcapi.Server
	mcp     *mcpapi.Server
	admin   *observe.Admin
	metrics *observe.Metrics
	tracing *observe.Tracing
	// auth is the authenticator in force (reloads swap it; reloadMu).
	auth    *policy.Authenticator
	audit   *policy.AuditSink
	auditor *pipeline.AuditRecorder
	// redis is the state shared by replicas (nil: none; redis.go).
	redis         *redisstate.Client
	countFallback func(mode string)
	// reload is the policy reload's state (reload.go).
	reload policyReload
	// creds are the credential sources the policy in force declares
	// (credentials.go; a reload swaps them).
	creds atomic.Pointer[policy.CredentialSources]
	// idempotency is the idempotent calls' store (idempotency.go).
	idempotency *pipeline.Idempotency

	grpcLis, mcpLis, adminLis net.Listener

	storeDesc string // the store, for the status page
	// notReady is why /readyz answers 503 (nil: ready).
	notReady atomic.Pointer[string]
	// storeWaitStart is when Start began waiting for the registry store
	// (unix ns; 0 once the registry is loaded).
	storeWaitStart atomic.Int64
	failed         chan error // the first listener that stopped serving on its own
	serving        sync.WaitGroup
	loops          sync.WaitGroup // pruneLoop, auditHealthLoop
	stopLoops      chan struct{}
	auditHealth    chan struct{} // auditHealthChanged → auditHealthLoop
	closeOnce      sync.Once
	closeErr       error
}

// ErrStoppedWaiting is Start's error when ctx ended while it waited for an
// unreachable registry store: a normal stop, not a failure.
var ErrStoppedWaiting = errors.New("stopped while waiting for the registry store")

// Start validates cfg, opens the store, seeds it, loads the registry and
// serves every configured face; it returns once they listen. While the
// store is unreachable (etcd down) it waits, logging each attempt, until
// ctx ends (ErrStoppedWaiting). Close stops it.
func Start(ctx context.Context, cfg Config) (_ *Gateway, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.logger()
	g := &Gateway{log: log, failed: make(chan error, 3), stopLoops: make(chan struct{}), auditHealth: make(chan struct{}, 1)}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	// The admin listener comes first, so probes and metrics are answered
	// while the store is waited for: /healthz says the process is alive,
	// /readyz says why it is not ready yet.
	g.notReady.Store(&reasonWaitingForStore)
	g.metrics = observe.NewMetrics()
	g.metrics.TrackStoreWait(g.storeWaited)
	if g.adminLis, err = listen(cfg.Listeners.Admin, cfg.Policy.Admin.ListenAddr, "admin listener (/metrics, /healthz, /readyz)"); err != nil {
		return nil, err
	}
	if g.adminLis != nil {
		g.admin = observe.NewAdmin(g.metrics, g.readiness, g.readyAbout)
		log.Info("admin endpoints serving", "addr", g.adminLis.Addr().String())
		// The MCP listener's connection bounds (idle timeout, cap) hold here too.
		g.serve("admin", func() error { return g.admin.Serve(g.adminLis, cfg.MCP.HTTP) })
		undo = append(undo, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			g.admin.Close(ctx)
			g.serving.Wait()
		})
	}

	// Every schema the registry takes is held to the policy's evaluation
	// bound: registered, seeded, followed from an upstream or read from the
	// store (it compiles them all).
	credSources, err := policy.NewCredentialSources(cfg.Policy.Credentials)
	if err != nil {
		return nil, fmt.Errorf("config: policy: %w", err)
	}
	g.creds.Store(credSources)
	ropts := []registry.Option{registry.WithLogger(log), registry.WithMaxSchemaEvaluations(cfg.Policy.Limits.MaxSchemaEvaluations),
		registry.WithAdmissionCheck(g.credentialCheck)}
	if cfg.DisableFastPaths {
		ropts = append(ropts, registry.WithoutFastPaths())
	}
	tools := cfg.Tools
	if cfg.ToolsFile != "" {
		fileTools, err := registry.LoadFileWith(cfg.ToolsFile, schemaBound(cfg.Policy.Limits.MaxSchemaEvaluations))
		if err != nil {
			return nil, err
		}
		tools = append(fileTools, tools...)
	}
	if g.store, err = openStore(cfg.Store); err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.store.Close() })
	g.storeDesc = cfg.Store.String()
	log.Info("registry store opened", "store", g.storeDesc)
	g.reg = registry.New(g.store, append(ropts, cfg.RegistryOptions...)...)
	// Seeded tools are admitted exactly as registered ones: strict lint too.
	adm := registry.Admission{StrictLint: cfg.StrictLint, LintProfiles: registry.DefaultLintProfiles(), Compile: g.reg.CompileOptions(),
		Check: g.credentialCheck}
	g.storeWaitStart.Store(time.Now().UnixNano())
	err = startRegistry(ctx, g.store, g.reg, tools, adm, cfg.Store, log)
	g.storeWaitStart.Store(0)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.reg.Close() })
	g.notReady.Store(&reasonStarting)
	if g.admin != nil {
		g.admin.SetStatus(g.status)
	}

	g.metrics.WatchRegistryStaleness(g.reg.StaleFor)
	g.metrics.WatchPendingChanges(g.pendingByUpstream)
	if g.tracing, err = observe.NewTracing(ctx, cfg.Policy.Tracing); err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.tracing.Shutdown(context.Background()) })
	if err := g.openRedis(ctx, cfg.Redis); err != nil {
		return nil, err
	}
	undo = append(undo, g.closeRedis)
	idem, err := g.openIdempotency(&cfg)
	if err != nil {
		return nil, err
	}
	undo = append(undo, g.closeIdempotency)
	pc, err := g.buildPolicy(ctx, &cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("config: policy: %w", err)
	}
	undo = append(undo, g.closePolicy)
	g.reload.init(g.metrics, cfg.Policy)
	if g.auth.Off() {
		log.Warn("authentication is off: every caller is anonymous and holds the anonymous roles; set auth.mode: on in a policy file for any shared deployment")
	}
	creds, err := cfg.Policy.TLS.serverCredentials()
	if err != nil {
		return nil, err
	}

	tsc := backend.ToolServiceConfig{DefaultTimeout: cfg.DefaultTimeout, MaxTimeout: cfg.MaxCallTimeout,
		MaxRecvMsgSize: cfg.BackendMaxRecvMsgSize, MaxSendMsgSize: cfg.BackendMaxSendMsgSize,
		TracePropagated: g.tracing.On, ReconnectMaxDelay: cfg.BackendReconnectMaxDelay,
		PassDebugInfo: cfg.Policy.BackendErrors.PassDebugInfo, TargetTLS: cfg.Policy.BackendTLS,
		MCPStdio: cfg.Policy.MCPUpstreams.Stdio, Log: log, CountStdioStart: g.metrics.CountStdioStart,
		CredentialAllowed: g.credentialAllowed}
	g.metrics.SetStdioServers(slices.Sorted(maps.Keys(cfg.Policy.MCPUpstreams.Stdio)))
	sopts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize), grpc.MaxSendMsgSize(cfg.MaxSendMsgSize)},
		cfg.GRPC.serverOptions()...)
	if creds != nil {
		sopts = append(sopts, grpc.Creds(creds))
	}
	// Tracing off: no stats handlers (the backend copies the trace headers).
	if g.tracing.On {
		tsc.DialOptions = append(tsc.DialOptions, grpc.WithStatsHandler(g.tracing.ClientHandler()))
		sopts = append(sopts, grpc.StatsHandler(g.tracing.ServerHandler()))
	}
	g.tools = backend.NewToolService(tsc)
	undo = append(undo, g.tools.Close)

	g.kinds = backend.NewKinds(g.tools)
	undo = append(undo, g.kinds.Close)
	pc.Registry, pc.Backend, pc.Log = g.reg, g.kinds, log
	pc.RequireCaller, pc.DisableFastPaths, pc.StageHook = true, cfg.DisableFastPaths, cfg.StageHook
	pc.Recorders = []pipeline.Recorder{g.metrics, g.reload.metrics}
	if cfg.Listeners.MCP != nil || cfg.MCP.ListenAddr != "" {
		pc.Recorders = append(pc.Recorders, mcpapi.CallRecorder{}) // a tools/call's outcome to its access line
	}
	if g.tracing.On { // the call's facts on its span
		pc.Recorders = append(pc.Recorders, g.tracing)
	}
	pc.Audit = g.auditor
	pc.Idempotency = idem
	g.pipe = pipeline.New(pc)
	g.metrics.SetStages(g.pipe.StageNames()[:len(g.pipe.StageNames())-1])
	g.grpc = grpcapi.New(grpcapi.Config{Pipeline: g.pipe, Registry: g.reg,
		Metrics: g.metrics, Log: log, StrictLint: cfg.StrictLint, ServerOptions: sopts, OKCallsLevel: cfg.OKCallsLevel,
		PreAuth: cfg.GRPC.preAuth()})

	if g.grpcLis, err = listen(cfg.Listeners.GRPC, cfg.ListenAddr, "listen"); err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.grpcLis.Close() })
	if g.mcpLis, err = listen(cfg.Listeners.MCP, cfg.MCP.ListenAddr, "MCP listener"); err != nil {
		return nil, err
	}
	if g.mcpLis != nil {
		undo = append(undo, func() { g.mcpLis.Close() })
		if g.mcp, err = mcpapi.New(mcpapi.Config{Pipeline: g.pipe, Registry: g.reg,
			MaxRequestBytes: cfg.MaxRecvMsgSize, HTTP: cfg.MCP.HTTP, Log: log, CountRequest: g.metrics.CountMCP,
			Tracer: g.mcpTracer(), Propagator: g.tracing.Propagator(), ResourceURL: g.MCPURL(),
			AllowedOrigins: cfg.Policy.MCP.AllowedOrigins, OKCallsLevel: cfg.OKCallsLevel}); err != nil {
			return nil, err
		}
	}

	g.stdio = cfg.Policy.MCPUpstreams.Stdio // before pruneLoop reads it
	g.loops.Add(1)
	go g.pruneLoop()
	if g.auditor != nil { // only an audit log changes health on its own
		g.loops.Add(1)
		go g.auditHealthLoop()
	}
	g.follow = mcpfollow.New(mcpfollow.Config{Registry: g.reg, Audit: g.auditor, Stdio: g.kinds.MCPUpstream, Log: log,
		Interval: cfg.Policy.MCPUpstreams.RelistInterval, PinPolicy: g.mcpPinPolicy, Bounds: cfg.Policy.MCPUpstreams.Bounds,
		CountOversized: observe.NewMCPUpstreamMetrics(g.metrics).CountOversized, ReferenceAllowed: g.referenceAllowed})
	g.kinds.MCPUpstream.OnToolListChanged(g.follow.NotifyStdio)
	go g.follow.Run()
	warnUnrunnableStdio(log, g.stdio)
	g.serve("gRPC", func() error { return g.grpc.Serve(g.grpcLis) })
	if g.mcp != nil {
		log.Info("MCP endpoint serving (streamable HTTP, stateless)", "url", g.MCPURL())
		g.serve("MCP", func() error { return g.mcp.Serve(g.mcpLis) })
	}
	// Ready: the registry is loaded and gRPC serves; Close clears it.
	g.notReady.Store(nil)
	log.Info("gateway serving", "addr", g.grpcLis.Addr().String(), "tools", g.reg.Snapshot().Len())
	return g, nil
}

// Why /readyz answers 503.
var (
	reasonWaitingForStore = "waiting for the registry store"
	reasonStarting        = "starting"
	reasonShuttingDown    = "shutting down"
)

// storeWaited is how long Start has been waiting for the registry store
// (0 when it is not waiting).
func (g *Gateway) storeWaited() time.Duration {
	if t := g.storeWaitStart.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return 0
}

// listen returns given, or a listener on addr ("" with no given listener:
// off, nil).
func listen(given net.Listener, addr, what string) (net.Listener, error) {
	if given != nil {
		return given, nil
	}
	if addr == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return lis, nil
}

func (g *Gateway) serve(what string, f func() error) {
	g.serving.Add(1)
	go func() {
		defer g.serving.Done()
		if err := f(); err != nil {
			g.log.Error(what+" listener failed", "error", err.Error())
			g.failed <- fmt.Errorf("%s listener: %w", what, err)
		}
	}()
}

// buildPolicy builds the policy objects from cfg into a pipeline config.
// ctx bounds a JWKS fetch.
func (g *Gateway) buildPolicy(ctx context.Context, cfg *PolicyConfig) (pc pipeline.Config, err error) {
	pol, err := g.buildSwappable(ctx, cfg, nil, nil)
	if err != nil {
		return pc, err
	}
	g.auth = pol.Auth
	fail := func(err error) (pipeline.Config, error) { g.closePolicy(); return pc, err }
	pc.Auth, pc.Authz, pc.Rules, pc.RateLimit, pc.RegistryRate = pol.Auth, pol.Authz, pol.Rules, pol.RateLimit, pol.RegistryRate
	pc.Limits, pc.ForwardEntityBound, pc.OptionalNulls, pc.InFlight = pol.Limits, pol.ForwardEntityBound, pol.OptionalNulls, pol.InFlight
	opt := policy.AuditSinkOptions{RotateBytes: cfg.Audit.RotateBytes,
		OnDrop: g.metrics.CountAuditDropped,
		// The sink's error names the file: logs only, never a caller.
		OnError: func(err error, suppressed int64) {
			g.log.Error("audit log write failed; records are being lost", "error", err.Error(),
				"suppressed_since_last_report", suppressed, "on_failure", auditMode(cfg.Audit))
		},
		OnFail: g.auditHealthChanged,
		OnRecover: func(dropped int64) {
			g.log.Info("audit log writable again", "records_dropped", dropped)
			g.auditHealthChanged()
		}}
	switch cfg.Audit.Path {
	case "":
	case "-":
		g.audit = policy.NewWriterSink(os.Stdout, opt)
	default:
		if g.audit, err = policy.OpenFileSink(cfg.Audit.Path, opt); err != nil {
			return fail(err)
		}
	}
	if g.audit != nil {
		g.auditor = pipeline.NewAuditRecorder(g.audit, auditMode(cfg.Audit) == AuditFailClosed,
			func(msg string, err error) { g.log.Debug(msg, "error", err.Error()) })
	}
	return pc, nil
}

// auditMode is audit.on_failure with its default: fail-closed.
func auditMode(c AuditConfig) string {
	if c.OnFailure == "" {
		return AuditFailClosed
	}
	return c.OnFailure
}

// errAuditUnwritable is /readyz's reason while fail-closed audit cannot
// write (no path: the log line has it).
var errAuditUnwritable = errors.New("audit log cannot be written (audit.on_failure: fail-closed); calls are refused")

// readiness is /readyz: serving, and not refusing every call for audit.
func (g *Gateway) readiness() error {
	if r := g.notReady.Load(); r != nil {
		return errors.New(*r)
	}
	if g.auditor != nil && !g.auditor.Writable() {
		return errAuditUnwritable
	}
	return nil
}

// closePolicy releases the JWKS refresh and flushes the audit log.
func (g *Gateway) closePolicy() {
	g.reload.mu.Lock()
	defer g.reload.mu.Unlock()
	if g.auth != nil {
		g.auth.Close()
	}
	g.reload.closeRetired()
	if g.audit != nil {
		if err := g.audit.Close(); err != nil {
			g.log.Warn("closing the audit log", "error", err.Error())
		}
	}
}

// pruneLoop closes backend connections and MCP upstream sessions no
// registered tool uses any more, and forgets audit redactors of gone
// revisions, each time the registry changes.
func (g *Gateway) pruneLoop() {
	defer g.loops.Done()
	changes, unsubscribe := g.reg.Changes()
	defer unsubscribe()
	warned := map[*registry.Entry]bool{}
	g.warnUnconfiguredStdio(g.reg.Snapshot().List(), warned)
	for {
		select {
		case <-g.stopLoops:
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			inUse := map[string]bool{}
			entries := g.reg.Snapshot().List()
			g.warnUnconfiguredStdio(entries, warned)
			for _, e := range entries {
				inUse[e.Tool.Target()] = true
			}
			g.tools.Retain(func(target string) bool { return inUse[target] })
			g.kinds.MCPUpstream.Retain(entries)
			if g.auditor != nil {
				g.auditor.Prune(entries)
			}
		}
	}
}

// warnUnconfiguredStdio logs, once per tool revision, a tool naming a
// stdio server this gateway's policy does not declare (a typo, or a
// replica configured differently): its calls answer Unavailable. warned
// holds the revisions already logged and is pruned to entries.
func (g *Gateway) warnUnconfiguredStdio(entries []*registry.Entry, warned map[*registry.Entry]bool) {
	live := make(map[*registry.Entry]bool, len(entries))
	for _, e := range entries {
		live[e] = true
		sp := e.Tool.Spec
		if sp == nil || sp.MCPTool == nil || warned[e] {
			continue
		}
		if name, ok := registry.StdioName(sp.MCPTool.URL); ok {
			if _, configured := g.stdio[name]; !configured {
				g.log.Warn("a tool names a stdio server this gateway does not run: its calls will be unavailable",
					"tool", e.Tool.Name, "server", policy.Bound(name))
				warned[e] = true
			}
		}
	}
	for e := range warned {
		if !live[e] {
			delete(warned, e)
		}
	}
}

// auditHealthChanged tells auditHealthLoop the audit log's writability
// changed (the sink's OnFail and OnRecover: it never blocks the writer).
func (g *Gateway) auditHealthChanged() {
	select {
	case g.auditHealth <- struct{}{}:
	default: // a change is pending already: the loop reads the state, not the count
	}
}

// auditHealthLoop keeps the gRPC health of the gateway's calls in step
// with whether they can be served: NOT_SERVING while fail-closed audit
// cannot write and refuses every call, so a balancer checking gRPC health
// moves traffic away as one checking /readyz does; SERVING again once it
// writes.
func (g *Gateway) auditHealthLoop() {
	defer g.loops.Done()
	serving := true
	for {
		if now := g.auditor.Writable(); now != serving {
			serving = now
			g.grpc.SetInvokeServing(serving)
		}
		select {
		case <-g.stopLoops:
			return
		case <-g.auditHealth:
		}
	}
}

// GRPCAddr is the address a client on this host dials for gRPC.
func (g *Gateway) GRPCAddr() string { return dialAddr(g.grpcLis.Addr()) }

// MCPURL is the MCP endpoint's URL, or "" when MCP is off.
func (g *Gateway) MCPURL() string {
	if g.mcpLis == nil {
		return ""
	}
	return "http://" + dialAddr(g.mcpLis.Addr()) + MCPPath
}

// AdminAddr is the admin listener's address, or "" when it is off.
func (g *Gateway) AdminAddr() string {
	if g.adminLis == nil {
		return ""
	}
	return dialAddr(g.adminLis.Addr())
}

func (g *Gateway) Registry() *registry.Registry { return g.reg }

// AuthenticationOn reports whether callers must authenticate (auth.mode on).
func (g *Gateway) AuthenticationOn() bool { return !g.auth.Off() }

// BackendTargets lists the backend targets the gateway holds a connection to.
func (g *Gateway) BackendTargets() []string { return g.tools.Targets() }

// PathCounts says, since Start, how many InvokeTool calls were forwarded
// as received, how many argument decodes of received bytes there were, and
// how many requests were decoded whole. Tests compare deltas.
func (g *Gateway) PathCounts() (forwarded, decodedArgs, decodedWhole int64) {
	st := g.pipe.Stats()
	return st.Forwarded, st.Decoded, g.grpc.DecodedWhole()
}

// RateLimitBuckets is the number of live rate-limit buckets (tests hold
// it bounded by the registry, whatever names callers send).
func (g *Gateway) RateLimitBuckets() int { return g.pipe.Policy().RateLimit.Len() }

// StageNames lists the pipeline's stages in order.
func (g *Gateway) StageNames() []string { return g.pipe.StageNames() }

// Failed delivers the error of a listener that stopped serving on its own.
func (g *Gateway) Failed() <-chan error { return g.failed }

// Close stops accepting calls (health NOT_SERVING, /readyz 503), lets calls
// in flight — and keyed runs that outlived their callers — finish until ctx
// is done, then cuts off the rest and releases everything. MCP goes first:
// its calls use the gateway's backend connections. It returns ctx's error
// if calls had to be cut off.
func (g *Gateway) Close(ctx context.Context) error {
	g.closeOnce.Do(func() {
		g.notReady.Store(&reasonShuttingDown)
		var errs []error
		if g.mcp != nil {
			errs = append(errs, g.mcp.Shutdown(ctx))
		}
		errs = append(errs, g.grpc.Shutdown(ctx))
		// Keyed runs that outlived their callers, before their backends
		// and the idempotency store close.
		errs = append(errs, g.pipe.CloseDetached(ctx))
		close(g.stopLoops)
		g.loops.Wait()
		if g.follow != nil {
			g.follow.Close()
		}
		g.tools.Close()
		g.kinds.Close()
		if g.admin != nil {
			g.admin.Close(ctx)
		}
		g.serving.Wait()
		g.closePolicy()
		g.closeIdempotency()
		g.closeRedis()
		g.tracing.Shutdown(ctx)
		g.reg.Close()
		g.store.Close()
		for _, err := range errs {
			if err != nil {
				g.closeErr = err
				break
			}
		}
	})
	return g.closeErr
}

// Run starts the gateway and serves until ctx is done (SIGINT/SIGTERM) or
// a listener fails, then shuts down gracefully within cfg.ShutdownGrace.
func Run(ctx context.Context, cfg Config) error {
	g, err := Start(ctx, cfg)
	if errors.Is(err, ErrStoppedWaiting) {
		return nil
	}
	if err != nil {
		return err
	}
	var failed error
	select {
	case failed = <-g.Failed():
	case <-ctx.Done():
	}
	g.log.Info("shutting down: draining calls in flight", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	if err := g.Close(sctx); err != nil {
		g.log.Warn("shutdown grace ran out; remaining calls were cut off", "grace", cfg.ShutdownGrace)
	}
	return failed
}

// startRegistry seeds the store with the start-up tools and starts the
// registry. While the store is unreachable (etcd down: ErrUnavailable) it
// waits and tries again, logging each attempt, until ctx ends — rather
// than exiting: a fleet restarting during an etcd outage then comes back by
// itself within seconds of etcd, not after an orchestrator's crash-loop
// back-off. Any other error (a bad tool, a corrupt file) stops start-up.
func startRegistry(ctx context.Context, store registry.Store, reg *registry.Registry, tools []registry.Tool, adm registry.Admission, sc StoreConfig, log *slog.Logger) error {
	wait := sc.RetryFirst
	for {
		err := registry.SeedWith(ctx, store, tools, adm)
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
			return ErrStoppedWaiting
		case <-time.After(wait):
		}
		wait = min(2*wait, sc.RetryMax)
	}
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

// Store is the registry's store.
func (g *Gateway) Store() registry.Store { return g.store }

// mcpTracer is the MCP face's tracer, nil when tracing is off.
func (g *Gateway) mcpTracer() trace.Tracer {
	if !g.tracing.On {
		return nil
	}
	return g.tracing.Tracer()
}

// warnUnrunnableStdio logs each configured stdio server whose executable
// this host cannot run: the gateway still starts (the policy may be shared
// by hosts that differ), but its tools will answer Unavailable.
func warnUnrunnableStdio(log *slog.Logger, servers map[string]mcpupstream.Command) {
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := runnable(servers[name].Path); err != nil {
			log.Warn("mcp stdio server cannot run here: its tools will be unavailable", "server", name, "err", err)
		}
	}
}

// runnable is nil when path is an executable file on this host.
func runnable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// schemaBound compiles tools with the evaluation bound n (0: the default),
// as the registry does (registry.WithMaxSchemaEvaluations).
func schemaBound(n int) registry.CompileOptions {
	return registry.CompileOptions{Schema: []schema.Option{schema.WithMaxEvaluations(n)}}
}
