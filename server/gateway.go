package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
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
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/schema"
	"github.com/flowdrop/gateway/registry/search"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/console"
	"github.com/flowdrop/gateway/server/grpcapi"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/mcpfollow"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/policyreload"
	"github.com/flowdrop/gateway/server/repairstats"
)

// Gateway is a started gateway: the registry over its store, the pipeline,
// the gRPC face, and the MCP face and admin listener when configured.
type Gateway struct {
	log    *slog.Logger
	store  registry.Store
	reg    *registry.Registry
	search *search.Index
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
	// repairs is repair analytics (a Recorder; GetRepairStats answers it).
	repairs *repairstats.Stats
	tracing *observe.Tracing
	// traceReport rate-limits the log of failed OTLP exports (trace_export.go).
	traceReport traceExportReport
	// lintProfiles are the provider profiles tools are linted against
	// (Config.LintProfiles or the default).
	lintProfiles []lint.Profile
	// auth is the authenticator in force (reloads swap it; reloadMu).
	auth    *policy.Authenticator
	audit   *policy.AuditSink
	auditor *pipeline.AuditRecorder
	// redis is the state shared by replicas (nil: none; redis.go).
	redis         *redisstate.Client
	console       *console.Console // nil without the admin listener
	countFallback func(mode string)
	// reload holds the policy in force and makes reloads one at a time
	// (reload.go); its lock guards auth. Nil until the policy is built.
	reload *policyreload.Reloader[PolicyConfig]
	// creds are the credential sources the policy in force declares
	// (credentials.go; a reload swaps them).
	creds atomic.Pointer[policy.CredentialSources]
	// identity is the upstream identity resolver the policy in force makes
	// (server/identity; a reload swaps it).
	identity atomic.Pointer[identity.Resolver]
	// userTokens is the user-consent mode's token store (user_consent.go),
	// where userTokensAt says; opened once, kept across reloads.
	userTokensMu    sync.Mutex
	userTokens      identity.TokenStore
	userTokensAt    string
	userTokensClose func() error
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
	// Lazy: a start serves without compiling every stored tool first (at
	// 100,000 tools that took minutes); registry/lazy.go.
	ropts := []registry.Option{registry.WithLogger(log), registry.WithMaxSchemaEvaluations(cfg.Policy.Limits.MaxSchemaEvaluations),
		registry.WithAdmissionCheck(g.credentialCheck), registry.WithLazyCompile()}
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
	g.lintProfiles = cfg.lintProfiles()
	adm := registry.Admission{StrictLint: cfg.StrictLint, LintProfiles: g.lintProfiles, Compile: g.reg.CompileOptions(),
		Check: g.credentialCheck}
	g.storeWaitStart.Store(time.Now().UnixNano())
	err = startRegistry(ctx, g.store, g.reg, tools, adm, cfg.Store, log)
	g.storeWaitStart.Store(0)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.reg.Close() })
	// Both faces search this one index; it indexes nothing until the first
	// search.
	g.search = search.New(g.reg)
	undo = append(undo, g.search.Close)
	g.notReady.Store(&reasonStarting)

	g.metrics.WatchRegistryStaleness(g.reg.StaleFor)
	g.metrics.WatchReady(func() bool { return g.readiness() == nil })
	g.metrics.WatchPendingChanges(g.pendingByUpstream)
	if g.tracing, err = observe.NewTracing(ctx, cfg.Policy.Tracing, g.traceExportFailed); err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.tracing.Shutdown(context.Background()) })
	if err := g.openRedis(ctx, cfg.Redis); err != nil {
		return nil, err
	}
	undo = append(undo, g.closeRedis)
	// After Redis: the user-consent mode's store may be there.
	ui, err := g.withConsentStore(cfg.Policy.UpstreamIdentity)
	if err != nil {
		return nil, fmt.Errorf("config: policy: %w", err)
	}
	undo = append(undo, g.closeUserTokens)
	idr, err := identity.New(ui)
	if err != nil {
		return nil, fmt.Errorf("config: policy: %w", err)
	}
	g.identity.Store(idr)
	if g.admin != nil {
		g.admin.SetJWKS(g.jwks)
	}
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
	policyMetrics := observe.NewPolicyMetrics(g.metrics)
	g.reload = policyreload.New(policyreload.Config[PolicyConfig]{Policy: cfg.Policy, Hash: policyHash, Metrics: policyMetrics, Log: log})
	if g.admin != nil {
		// Once the policy is in force: the page names its hash.
		g.admin.SetStatus(g.status)
	}
	if g.auth.Off() {
		log.Warn("authentication is off: every caller is anonymous and holds the anonymous roles; set auth.mode: on in a policy file for any shared deployment")
	}
	if k := g.identity.Load().Consent(); k != nil && !k.VerifiesCaller() {
		log.Warn(identity.NoVerifyCallerWarning)
	}
	creds, err := cfg.Policy.TLS.serverCredentials()
	if err != nil {
		return nil, err
	}

	tsc := backend.ToolServiceConfig{DefaultTimeout: cfg.DefaultTimeout, MaxTimeout: cfg.MaxCallTimeout,
		MaxRecvMsgSize: cfg.BackendMaxRecvMsgSize, MaxSendMsgSize: cfg.BackendMaxSendMsgSize,
		TracePropagated: g.tracing.On, ReconnectMaxDelay: cfg.BackendReconnectMaxDelay, Ejection: cfg.BackendEjection,
		MCPIdleConnsPerUpstream: cfg.BackendMCPIdleConns,
		MCPSubjectSessions:      cfg.BackendMCPSubjectSessions, MCPSubjectSessionIdle: cfg.BackendMCPSubjectSessionIdle,
		CountMCPSessionEviction: g.metrics.CountMCPSessionEviction,
		PassDebugInfo:           cfg.Policy.BackendErrors.PassDebugInfo, TargetTLS: cfg.Policy.BackendTLS,
		MCPStdio: cfg.Policy.MCPUpstreams.Stdio, Log: log, CountStdioStart: g.metrics.CountStdioStart,
		CredentialAllowed: g.credentialAllowed, InputForbidden: g.mcpInputForbidden, Identity: g.identity.Load}
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
	g.metrics.TrackBackendEjections(func(yield func(observe.BackendEjections) bool) {
		for _, e := range g.reg.Snapshot().List() {
			if total, ejected, ok := g.tools.Ejections(&e.Tool); ok && !yield(observe.BackendEjections{Tool: e.Tool.Name, Total: total, Ejected: ejected}) {
				return
			}
		}
	})

	g.kinds = backend.NewKinds(g.tools)
	undo = append(undo, g.kinds.Close)
	g.relayTasks()
	pc.Registry, pc.Backend, pc.Log = g.reg, g.kinds, log
	pc.RequireCaller, pc.DisableFastPaths, pc.StageHook = true, cfg.DisableFastPaths, cfg.StageHook
	if g.repairs, err = repairstats.New(repairstats.Config{CallerBy: repairstats.CallerBy(cfg.RepairStatsCaller), Registerer: g.metrics.Registry()}); err != nil {
		return nil, err
	}
	pc.Recorders = []pipeline.Recorder{g.metrics, policyMetrics, g.repairs}
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
	g.grpc = grpcapi.New(grpcapi.Config{Pipeline: g.pipe, Registry: g.reg, Search: g.search,
		Metrics: g.metrics, Log: log, StrictLint: cfg.StrictLint, LintProfiles: cfg.lintProfiles(), ServerOptions: sopts, OKCallsLevel: cfg.OKCallsLevel,
		PreAuth: cfg.GRPC.preAuth(), RepairStats: g.repairs, UserTokens: g.UserConsent})

	if g.grpcLis, err = listen(cfg.Listeners.GRPC, cfg.ListenAddr, "listen"); err != nil {
		return nil, err
	}
	undo = append(undo, func() { g.grpcLis.Close() })
	if g.mcpLis, err = listen(cfg.Listeners.MCP, cfg.MCP.ListenAddr, "MCP listener"); err != nil {
		return nil, err
	}
	if g.mcpLis == nil && g.identity.Load().Consent() != nil {
		return nil, errors.New("config: policy: upstream_identity.user_consent: its authorization endpoints are served on the MCP listener, which is off")
	}
	if g.mcpLis != nil {
		undo = append(undo, func() { g.mcpLis.Close() })
		if g.mcp, err = mcpapi.New(mcpapi.Config{Pipeline: g.pipe, Registry: g.reg,
			MaxRequestBytes: cfg.MaxRecvMsgSize, HTTP: cfg.MCP.HTTP, Log: log, CountRequest: g.metrics.CountMCP,
			Tracer: g.mcpTracer(), Propagator: g.tracing.Propagator(), ResourceURL: g.MCPURL(),
			AllowedOrigins: cfg.Policy.MCP.AllowedOrigins, OKCallsLevel: cfg.OKCallsLevel, SDKOnly: cfg.MCP.SDKOnly,
			Upstreams: g.kinds.MCPUpstream, UpstreamBounds: cfg.Policy.MCPUpstreams.Bounds, InputState: g.mcpInputState,
			Tasks: g.taskStore(), TaskUpstreams: g.kinds.MCPUpstream, CancelFleet: g.cancelFleet(), SessionSubscriptions: g.sessionSubscriptions(),
			InputFleet: g.inputFleet(),
			Search:     g.search, Discovery: cfg.Policy.MCP.Discovery, Browser: g.consentBrowser()}); err != nil {
			return nil, err
		}
		// Before serving: the upstreams' resource updates and list changes
		// reach the face's subscribers.
		g.kinds.MCPUpstream.OnNotice(g.mcp.UpstreamNotified)
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
	if g.admin != nil {
		g.serveConsole(&cfg)
	}
	// Ready: the registry is loaded and gRPC serves; Close clears it.
	g.notReady.Store(nil)
	log.Info("gateway serving", "addr", g.grpcLis.Addr().String(), "tools", g.reg.Snapshot().Len())
	return g, nil
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
		g.closeUserTokens()
		g.closeRedis()
		g.tracing.Shutdown(ctx)
		g.search.Close()
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

// mcpTracer is the MCP face's tracer, nil when tracing is off.
func (g *Gateway) mcpTracer() trace.Tracer {
	if !g.tracing.On {
		return nil
	}
	return g.tracing.Tracer()
}

// schemaBound compiles tools with the evaluation bound n (0: the default),
// as the registry does (registry.WithMaxSchemaEvaluations).
func schemaBound(n int) registry.CompileOptions {
	return registry.CompileOptions{Schema: []schema.Option{schema.WithMaxEvaluations(n)}}
}
