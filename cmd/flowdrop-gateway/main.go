// Command flowdrop-gateway runs the FlowDrop tool gateway.
//
// With no flags it serves the demo tools on 127.0.0.1:7443, backed by the
// example tool service it starts in-process, and prints a call to try; the
// same tools are served over MCP at http://127.0.0.1:7444/mcp. The
// registry is kept in ./flowdrop-data/registry.db (--data-dir), so tools
// registered with `flowdropctl tools register` survive a restart; --store
// etcd shares one registry between replicas.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/observe"
)

// The --policy file (absolute; "" without one) and the flags' overrides of
// it, for reloads (sighup.go).
var (
	policyPath   string
	policyAdjust func(*server.PolicyConfig)
	watchPolicy  bool
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// The log is written in batches (one write(2) for the lines of a few
	// milliseconds, not one per call); what is waiting is written before
	// the process exits.
	logs := observe.NewLogWriter(os.Stderr, observe.LogWriterOptions{})
	code := run(ctx, os.Args[1:], os.Stdout, logs)
	stop()
	logs.Close()
	os.Exit(code)
}

// run parses flags into a server.Config and runs the gateway until ctx ends.
// It returns the process exit code (2: bad usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, "flowdrop-gateway", buildinfo.Read())
		return 0
	}
	if len(args) > 0 && args[0] == "check-config" {
		return checkConfig(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	cfg, demo, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway:", err)
		return 2
	}
	bi := buildinfo.Read()
	cfg.Logger.Info("flowdrop-gateway starting", "version", bi.Version, "revision", bi.ShortRevision(), "go", bi.GoVersion)
	reloader := &policyReloader{log: cfg.Logger, path: policyPath, adjust: policyAdjust, watchFile: watchPolicy}
	defer reloader.catchHangups()()
	setting, source := applyGCPercent(gcPercent, os.Getenv)
	cfg.Logger.Info("garbage collector target", "gogc", setting, "from", source)
	limit, limitSource := applyMemoryLimit(memoryLimit, os.Getenv)
	cfg.Logger.Info("soft memory limit", "limit", limit, "from", limitSource)
	heapCtx, stopHeapWatch := context.WithCancel(ctx)
	defer stopHeapWatch()
	go watchLiveHeap(heapCtx, 30*time.Second, cfg.Logger.Warn)
	stopPprof, err := startPprof(pprofListen)
	if err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway:", err)
		return 2
	}
	defer stopPprof()
	if err := serve(ctx, cfg, demo, stdout, reloader); err != nil {
		fmt.Fprintln(stderr, "flowdrop-gateway:", err)
		var ce *server.ConfigError
		if errors.As(err, &ce) {
			return 2
		}
		return 1
	}
	return 0
}

// serve runs the gateway until ctx ends: with demo, the example tool
// service in-process and the demo tools seeded against it; the banner on
// out once it listens.
func serve(ctx context.Context, cfg server.Config, demo bool, out io.Writer, reloader *policyReloader) error {
	var demoAddr string
	if demo {
		addr, stop, err := startDemoBackend(cfg.Logger)
		if err != nil {
			return fmt.Errorf("starting the example tool service: %w", err)
		}
		defer stop()
		demoAddr = addr
		tools, err := registry.ParseTools(demotools.ToolsYAML(addr), "embedded demo tools")
		if err != nil {
			return err
		}
		cfg.Tools = append(tools, cfg.Tools...)
	}
	g, err := server.Start(ctx, cfg)
	if errors.Is(err, server.ErrStoppedWaiting) {
		return nil
	}
	if err != nil {
		return err
	}
	reloader.serving(g)
	stopWatch, err := reloader.watch()
	if err != nil {
		// SIGHUP still reloads; the gateway serves either way.
		cfg.Logger.Error("cannot watch the policy file; reload it with SIGHUP", "error", err.Error())
	} else {
		defer stopWatch()
	}
	// The store may hold more than was seeded (tools registered earlier).
	printBanner(out, g, demoAddr)
	var failed error
	select {
	case failed = <-g.Failed():
	case <-ctx.Done():
	}
	cfg.Logger.Info("shutting down: draining calls in flight", "grace", cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	if err := g.Close(sctx); err != nil {
		cfg.Logger.Warn("shutdown grace ran out; remaining calls were cut off", "grace", cfg.ShutdownGrace)
	}
	return failed
}

// parseFlags returns the gateway's configuration and whether to serve the
// demo tools. The configuration is validated by server.Start.
func parseFlags(args []string, stderr io.Writer) (server.Config, bool, error) {
	cfg := server.DefaultConfig()
	policyPath = ""
	fs := flag.NewFlagSet("flowdrop-gateway", flag.ContinueOnError)
	fs.Usage = func() { printUsage(fs.Output(), fs) }
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ListenAddr, "listen", cfg.ListenAddr, "address to serve gRPC on")
	fs.StringVar(&cfg.MCP.ListenAddr, "mcp-listen", server.DefaultMCPListenAddr, `address of the MCP endpoint (streamable HTTP at `+server.MCPPath+`); "" turns it off`)
	fs.DurationVar(&cfg.MCP.HTTP.ReadTimeout, "mcp-read-timeout", cfg.MCP.HTTP.ReadTimeout, "MCP: time a client has to send a request's body (408 and the connection closed past it)")
	fs.DurationVar(&cfg.MCP.HTTP.WriteTimeout, "mcp-write-timeout", cfg.MCP.HTTP.WriteTimeout, "MCP: time each write of a response may take (a client that does not read is cut off; long streams are not)")
	fs.DurationVar(&cfg.MCP.HTTP.IdleTimeout, "mcp-idle-timeout", cfg.MCP.HTTP.IdleTimeout, "MCP: an idle keep-alive connection is closed after this")
	fs.IntVar(&cfg.MCP.HTTP.MaxConnections, "mcp-max-connections", cfg.MCP.HTTP.MaxConnections, "MCP: connections served at once; more wait to be accepted")
	fs.BoolVar(&cfg.MCP.SDKOnly, "mcp-sdk-only", false, "MCP: answer every request with the go-sdk's handler (the tools/call fast path off; same answers, more CPU and memory per call)")
	fs.Var(uint32Flag{&cfg.GRPC.MaxConcurrentStreams}, "grpc-max-streams", "gRPC: `streams` one connection may have open; more are refused")
	fs.IntVar(&cfg.GRPC.MaxUnauthenticatedStreams, "grpc-max-unauthenticated-streams", cfg.GRPC.MaxUnauthenticatedStreams,
		"gRPC: streams per connection let through before authentication (health, reflection, a JWT whose key is not cached yet); more are refused")
	fs.DurationVar(&cfg.GRPC.UnauthenticatedReceiveTimeout, "grpc-unauthenticated-receive-timeout", cfg.GRPC.UnauthenticatedReceiveTimeout,
		"gRPC: time such a stream's request message has to arrive; past it the stream is cancelled")
	fs.Var(int32Flag{&cfg.GRPC.StreamWindow}, "grpc-stream-window", "gRPC: flow-control window of a stream, in `bytes` (static; at least 65535)")
	fs.Var(int32Flag{&cfg.GRPC.ConnWindow}, "grpc-conn-window", "gRPC: flow-control window of a connection, in `bytes` (static; at least 65535)")
	fs.Var(uint32Flag{&cfg.GRPC.MaxHeaderBytes}, "grpc-max-header-bytes", "gRPC: largest request header list accepted, in `bytes`")
	fs.DurationVar(&cfg.GRPC.HandshakeTimeout, "grpc-handshake-timeout", cfg.GRPC.HandshakeTimeout, "gRPC: time a new connection has for its TLS handshake and HTTP/2 preface")
	fs.DurationVar(&cfg.GRPC.IdleTimeout, "grpc-idle-timeout", cfg.GRPC.IdleTimeout, "gRPC: a connection without streams is closed after this (clients reconnect on their next call)")
	fs.DurationVar(&cfg.GRPC.KeepaliveTime, "grpc-keepalive-time", cfg.GRPC.KeepaliveTime, "gRPC: ping a connection quiet for this long")
	fs.DurationVar(&cfg.GRPC.KeepaliveTimeout, "grpc-keepalive-timeout", cfg.GRPC.KeepaliveTimeout, "gRPC: close a connection whose ping is not answered within this")
	fs.StringVar(&cfg.ToolsFile, "tools", "", "declarative tools file (YAML or JSON); default: the embedded demo tools")
	demoFlag := fs.Bool("demo", false, "start the example tool service in-process and register the demo tools (default: on when --tools is not given)")
	fs.DurationVar(&cfg.BackendReconnectMaxDelay, "backend-reconnect-max-delay", cfg.BackendReconnectMaxDelay, "longest wait between connection attempts to a backend that went away")
	fs.IntVar(&cfg.BackendEjection.Threshold, "backend-eject-failures", cfg.BackendEjection.Threshold, "balanced backends: eject an address after this many calls in a row fail Unavailable (0: never eject)")
	fs.DurationVar(&cfg.BackendEjection.Base, "backend-eject-base", cfg.BackendEjection.Base, "balanced backends: an ejection lasts this long times the address's ejections in a row")
	fs.DurationVar(&cfg.BackendEjection.Max, "backend-eject-max", cfg.BackendEjection.Max, "balanced backends: longest ejection")
	fs.IntVar(&cfg.BackendEjection.MaxPercent, "backend-eject-max-percent", cfg.BackendEjection.MaxPercent, "balanced backends: most of a target's addresses ejected at once, in percent (never all)")
	fs.IntVar(&cfg.BackendMCPIdleConns, "backend-mcp-idle-conns", cfg.BackendMCPIdleConns, "idle connections kept to each upstream MCP server (0: 64)")
	fs.IntVar(&cfg.BackendMCPSubjectSessions, "backend-mcp-subject-sessions", cfg.BackendMCPSubjectSessions, "per-caller sessions kept to each upstream MCP server under a non-static upstream_identity, the least recently used closed first (0: 256)")
	fs.DurationVar(&cfg.BackendMCPSubjectSessionIdle, "backend-mcp-subject-session-idle", cfg.BackendMCPSubjectSessionIdle, "close a per-caller upstream MCP session unused this long (0: 10m)")
	fs.DurationVar(&cfg.DefaultTimeout, "default-timeout", cfg.DefaultTimeout, "backend call timeout when neither the caller nor the tool sets one")
	fs.DurationVar(&cfg.MaxCallTimeout, "max-call-timeout", cfg.MaxCallTimeout, "cap on every backend call: the effective deadline is the earliest of the caller's, the tool's timeout and this")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "how long shutdown waits for calls in flight")
	fs.IntVar(&cfg.MaxRecvMsgSize, "max-recv-msg-size", cfg.MaxRecvMsgSize, "largest request accepted from agents, bytes")
	fs.IntVar(&cfg.MaxSendMsgSize, "max-send-msg-size", cfg.MaxSendMsgSize, "largest response sent to agents, bytes")
	fs.IntVar(&cfg.BackendMaxRecvMsgSize, "backend-max-recv-msg-size", cfg.BackendMaxRecvMsgSize, "largest response accepted from backends, bytes")
	fs.IntVar(&cfg.BackendMaxSendMsgSize, "backend-max-send-msg-size", cfg.BackendMaxSendMsgSize, "largest request sent to backends, bytes")
	fs.StringVar(&cfg.Store.Kind, "store", cfg.Store.Kind, "registry store: bolt (durable file in --data-dir), etcd (shared by replicas) or memory (lost on exit)")
	fs.StringVar(&cfg.Store.DataDir, "data-dir", cfg.Store.DataDir, "directory of the bolt store's file ("+server.BoltFileName+"), relative to the working directory unless absolute")
	etcdEndpoints := fs.String("etcd-endpoints", "", "comma-separated etcd client URLs for --store etcd, e.g. http://10.0.0.1:2379,http://10.0.0.2:2379")
	fs.StringVar(&cfg.Store.EtcdPrefix, "etcd-prefix", cfg.Store.EtcdPrefix, "etcd key space of this gateway fleet (every replica uses the same)")
	fs.DurationVar(&cfg.Store.EtcdRequestTimeout, "etcd-request-timeout", cfg.Store.EtcdRequestTimeout, "bound on each etcd call; past it writes fail with Unavailable")
	fs.DurationVar(&cfg.Store.EtcdReconnectMaxDelay, "etcd-reconnect-max-delay", cfg.Store.EtcdReconnectMaxDelay, "longest wait between connection attempts to an etcd that went away")
	fs.StringVar(&cfg.Store.EtcdCAFile, "etcd-ca-file", "", "PEM CA bundle verifying etcd's certificate for https:// endpoints (default: the system roots)")
	fs.StringVar(&cfg.Store.EtcdCertFile, "etcd-cert-file", "", "client certificate (PEM) for an etcd that requires one; with --etcd-key-file")
	fs.StringVar(&cfg.Store.EtcdKeyFile, "etcd-key-file", "", "client key (PEM) for --etcd-cert-file")
	fs.StringVar(&cfg.Redis.Addr, "redis-addr", "", "host:port of a Redis every replica shares: rate limits, idempotency keys, MCP tasks and console sessions become fleet-wide (rate_limit.fallback says what happens while it is unreachable); with --redis-mode sentinel the Sentinels, with cluster some of the Cluster's nodes, comma-separated")
	fs.StringVar(&cfg.Redis.Mode, "redis-mode", "", "how Redis is deployed: single (default), sentinel (--redis-addr lists the Sentinels; --redis-sentinel-master names the primary) or cluster")
	fs.StringVar(&cfg.Redis.SentinelMaster, "redis-sentinel-master", "", "the name the Sentinels monitor the primary under (--redis-mode sentinel)")
	fs.StringVar(&cfg.Redis.SentinelPasswordFile, "redis-sentinel-password-file", "", "file holding the Sentinels' own password, if they require one (--redis-mode sentinel)")
	fs.StringVar(&cfg.Redis.Username, "redis-username", "", "Redis ACL user name (optional)")
	fs.StringVar(&cfg.Redis.PasswordFile, "redis-password-file", "", "file holding the Redis password (never given on the command line)")
	fs.IntVar(&cfg.Redis.DB, "redis-db", 0, "Redis database index")
	fs.DurationVar(&cfg.Redis.Timeout, "redis-timeout", redisstate.DefaultTimeout, "bound on each Redis command: a slow Redis delays a call by at most this (then the fallback decides)")
	fs.BoolVar(&cfg.Redis.TLS.Enabled, "redis-tls", false, "reach Redis over TLS (implied by the other --redis-tls-* flags)")
	fs.StringVar(&cfg.Redis.TLS.CAFile, "redis-tls-ca-file", "", "PEM CA bundle verifying Redis's certificate (default: the system roots)")
	fs.StringVar(&cfg.Redis.TLS.CertFile, "redis-tls-cert-file", "", "client certificate (PEM) for a Redis that requires one; with --redis-tls-key-file")
	fs.StringVar(&cfg.Redis.TLS.KeyFile, "redis-tls-key-file", "", "client key (PEM) for --redis-tls-cert-file")
	fs.StringVar(&cfg.Redis.TLS.ServerName, "redis-tls-server-name", "", "name checked in Redis's certificate (default: the host of --redis-addr)")
	fs.StringVar(&cfg.RepairStatsCaller, "repair-stats-caller", "subject", "what names a caller in repair analytics (flowdropctl tools stats, flowdrop_repair_field_calls_total): subject, role or none (each capped at 64 distinct values)")
	fs.BoolVar(&cfg.DisableFastPaths, "disable-fast-paths", false, "decode, normalize and validate every call by the general paths (same results, slower; for diagnosis)")
	var strictLint strictLintFlag
	fs.Var(&strictLint, "strict-lint", strictLintUsage)
	fs.BoolVar(&watchPolicy, "watch-policy", true, "reload the --policy file when it changes on disk (SIGHUP reloads it either way)")
	policyFile := fs.String("policy", "", "policy file (YAML or JSON): auth, authz, rules, limits, rate_limit, audit, admin, tracing")
	authOff := fs.Bool("auth-off", false, "run without authentication (every caller is anonymous; the gateway warns). Needed without --policy unless only the demo tools are served")
	adminListen := fs.String("admin-listen", server.DefaultAdminAddr, `address of the HTTP admin listener (/metrics, /healthz, /readyz); "" turns it off`)
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
	logOKCalls := fs.String("log-ok-calls", "info", `level of a successful call's access-log line on gRPC and MCP: info, or debug (off the default log; failures are logged either way)`)
	fs.StringVar(&pprofListen, "pprof-listen", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060); off by default")
	fs.IntVar(&gcPercent, "gc-percent", defaultGCPercent, "garbage collector target, as Go's GOGC (a GOGC environment variable wins): higher trades memory for CPU")
	memoryLimit = defaultMemoryLimit
	fs.Var(&memoryLimit, "memory-limit", "soft limit on the runtime's memory, as Go's GOMEMLIMIT (which wins when set): 64MiB, 2GiB, or off")
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	cfg.StrictLint, cfg.LintProfiles = strictLint.on, strictLint.profiles
	if err := validateGCPercent(gcPercent); err != nil {
		return cfg, false, err
	}
	if *etcdEndpoints != "" {
		for _, ep := range strings.Split(*etcdEndpoints, ",") {
			cfg.Store.EtcdEndpoints = append(cfg.Store.EtcdEndpoints, strings.TrimSpace(ep))
		}
	}
	// --demo defaults to on only when no tools file is given and the store
	// is not shared (demo tools point at a backend inside this one process,
	// which other replicas cannot reach); an explicit --demo or --demo=false
	// always wins.
	demo := cfg.ToolsFile == "" && cfg.Store.Kind != server.StoreEtcd
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "demo" {
			demo = *demoFlag
		}
	})
	// Authentication is never off by accident: the policy file says, or
	// --auth-off does, or this is the no-flags demo (DefaultConfig's policy
	// turns it off explicitly). Anything serving real tools must choose.
	var policyErr error
	switch {
	case *policyFile != "" && *authOff:
		return cfg, false, errors.New("--policy and --auth-off: give one (auth.mode in the policy file decides)")
	case *policyFile != "":
		p, err := server.LoadPolicyFile(*policyFile)
		if err != nil {
			return cfg, false, err
		}
		cfg.Policy = p
		if policyPath, err = filepath.Abs(*policyFile); err != nil {
			return cfg, false, err
		}
	case *authOff || (demo && cfg.ToolsFile == ""):
		cfg.Policy = server.DemoPolicy()
	default:
		policyErr = errors.New("authentication is not configured: give --policy FILE (with auth.mode: on) or --auth-off")
	}
	// The flag (default DefaultAdminAddr) wins unless a policy file gave
	// admin.listen_addr and the flag was not set.
	adminSet := false
	fs.Visit(func(f *flag.Flag) { adminSet = adminSet || f.Name == "admin-listen" })
	if adminSet || *policyFile == "" {
		cfg.Policy.Admin.ListenAddr = *adminListen
	}
	policyAdjust = nil
	if adminSet {
		addr := *adminListen // a reloaded file gets the same override
		policyAdjust = func(p *server.PolicyConfig) { p.Admin.ListenAddr = addr }
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cfg, false, fmt.Errorf("--log-level: %w", err)
	}
	switch *logOKCalls {
	case "info":
		cfg.OKCallsLevel = slog.LevelInfo
	case "debug":
		cfg.OKCallsLevel = slog.LevelDebug
	default:
		return cfg, false, fmt.Errorf("--log-ok-calls %q: want info or debug", *logOKCalls)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var handler func(io.Writer) slog.Handler
	switch *logFormat {
	case "text":
		handler = func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, hopts) }
	case "json":
		jopts := *hopts
		jopts.ReplaceAttr = durationsAsText
		handler = func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, &jopts) }
	default:
		return cfg, false, fmt.Errorf("--log-format %q: want text or json", *logFormat)
	}
	cfg.Logger = slog.New(handler(stderr))
	if lw, ok := stderr.(*observe.LogWriter); ok {
		lw.SetDropped(droppedLinesNote(handler))
	}
	if policyErr != nil {
		// Say everything that is wrong at once. Without authentication
		// configured the demo tools are off (or a tools file is given), so
		// the configuration is checked as it stands.
		return cfg, demo, errors.Join(policyErr, cfg.Validate())
	}
	return cfg, demo, nil
}

// durationsAsText writes a duration in a JSON log line as the text form
// the text format and the flags use ("1.5s"), not slog's integer
// nanoseconds, which read as a wrong unit.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// droppedLinesNote makes the line the batched log writes after lines it
// had to drop (its output did not keep up), in the log's format.
func droppedLinesNote(handler func(io.Writer) slog.Handler) func(n int64) []byte {
	return func(n int64) []byte {
		var b bytes.Buffer
		slog.New(handler(&b)).Warn("log lines dropped: the log output did not keep up", "dropped", n)
		return b.Bytes()
	}
}
