package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/flowdrop/gateway/internal/httplimits"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/repairstats"
)

// DefaultListenAddr is where the gateway listens unless told otherwise:
// loopback only, so a newcomer's `go run` exposes nothing to the network.
const DefaultListenAddr = "127.0.0.1:7443"

// Config is everything the gateway needs to start. cmd/flowdrop-gateway fills
// it from flags; tests fill it directly. Call Validate before use.
type Config struct {
	// ListenAddr is the host:port the gRPC server listens on.
	ListenAddr string
	// Listeners, when set, are used instead of listening on the addresses.
	Listeners Listeners
	// ToolsFile is a declarative YAML or JSON tools file that seeds the
	// registry at start-up (optional).
	ToolsFile string
	// Tools seed the registry at start-up too (after ToolsFile's), e.g.
	// the demo tools cmd/flowdrop-gateway serves.
	Tools []registry.Tool

	// Store is where the registry lives (bolt file by default, etcd for
	// replicas); the tools file and Tools seed it. See store.go.
	Store StoreConfig
	// RegistryOptions are passed to the registry (e.g. its re-watch
	// backoff).
	RegistryOptions []registry.Option

	// StrictLint refuses every schema with provider-lint errors in
	// LintProfiles, as if each registration set strict_lint (seeded tools
	// included). An error the profile's export rewrite repairs is a
	// warning (lint.LintExported).
	StrictLint bool
	// LintProfiles are the provider profiles registrations are linted
	// against and StrictLint enforces: the formats this deployment exports
	// its tools to. Nil: registry.DefaultLintProfiles() (openai, anthropic,
	// gemini — every format ExportTools serves as registered; openai-strict
	// is a client's opt-in, enforced only when named).
	LintProfiles []lint.Profile

	// DisableFastPaths turns every fast path off: arguments are always
	// decoded, normalized and validated by the general paths (the raw wire
	// checks and the fast schema validators are skipped). The results are
	// the same; tests run the end-to-end suite both ways.
	DisableFastPaths bool
	// StageHook, when set, runs before each pipeline stage of every tool
	// call with the stage's name (tests use it to fail inside the pipeline).
	StageHook func(stage string, c *pipeline.Call)

	// Policy is authentication, authorization, rules, limits, audit, the
	// admin listener and tracing (policy_config.go). Auth.Mode must be set
	// explicitly; DefaultConfig uses DemoPolicy (authentication off).
	Policy PolicyConfig

	// Redis is the state every replica shares (redis.go): with an Addr,
	// rate limits are decided fleet-wide in Redis.
	Redis RedisConfig

	// MCP is the Model Context Protocol endpoint (server/mcpapi): the same tools
	// and pipeline over streamable HTTP. Off unless MCP.ListenAddr or
	// Listeners.MCP is set.
	MCP MCPConfig

	// DefaultTimeout bounds a backend call when neither the caller's deadline
	// nor the tool's own timeout applies.
	DefaultTimeout time.Duration
	// MaxCallTimeout caps every backend call, whatever the caller's
	// deadline and the tool's timeout say: the effective deadline is the
	// earliest of the three.
	MaxCallTimeout time.Duration
	// ShutdownGrace is how long Run lets in-flight calls finish on shutdown
	// before it cuts them off (Close takes its own context).
	ShutdownGrace time.Duration

	// GRPC bounds the gRPC listener's connections and streams
	// (grpc_limits.go).
	GRPC GRPCLimits

	// MaxRecvMsgSize and MaxSendMsgSize limit messages between agents and the
	// gateway, in bytes.
	MaxRecvMsgSize int
	MaxSendMsgSize int
	// BackendMaxRecvMsgSize and BackendMaxSendMsgSize limit messages between
	// the gateway and tool backends, in bytes.
	BackendMaxRecvMsgSize int
	BackendMaxSendMsgSize int
	// BackendReconnectMaxDelay caps the back-off between connection
	// attempts to a backend that went away, so one that is back is reached
	// within about this long (and at once by the first call that finds the
	// connection failed).
	BackendReconnectMaxDelay time.Duration
	// BackendEjection is outlier ejection for balanced backends (a target
	// with several addresses): an address whose calls fail Unavailable
	// Threshold times in a row is passed over for a growing interval
	// (backend.EjectionConfig; Threshold 0: off).
	BackendEjection backend.EjectionConfig
	// BackendMCPIdleConns is how many idle connections to each upstream MCP
	// server (streamable HTTP) are kept for the next calls (0: the default,
	// mcpupstream.DefaultIdleConnsPerUpstream). Fewer than the calls in
	// flight to one upstream makes the rest open and close a connection each.
	BackendMCPIdleConns int
	// BackendMCPSubjectSessions bounds the per-caller sessions to one
	// upstream MCP server under a non-static identity mode, the least
	// recently used closed first (0: backend.DefaultMCPSubjectSessions);
	// BackendMCPSubjectSessionIdle closes one unused that long (0:
	// backend.DefaultMCPSubjectSessionIdle).
	BackendMCPSubjectSessions    int
	BackendMCPSubjectSessionIdle time.Duration

	// Logger receives structured logs. Nil: slog.Default().
	Logger *slog.Logger
	// OKCallsLevel is the level of a successful call's access-log line
	// ("finished call") on both faces, gRPC and MCP: slog.LevelInfo (the
	// zero value, the default) or slog.LevelDebug. Failures are logged at
	// their own level either way (observe.AccessLevel).
	OKCallsLevel slog.Level
	// RepairStatsCaller is what identifies a caller in repair analytics
	// (server/repairstats): "subject" (the default when empty), "role" or
	// "none".
	RepairStatsCaller string
}

// DefaultMaxCallTimeout is the gateway's cap on any backend call.
const DefaultMaxCallTimeout = 5 * time.Minute

// DefaultMsgSize is gRPC's own default receive limit (4 MiB), made explicit.
const DefaultMsgSize = 4 << 20

// DefaultConfig returns a Config with every default filled in: listen on
// DefaultListenAddr, the bolt store, authentication off (DemoPolicy).
func DefaultConfig() Config {
	return Config{
		ListenAddr:               DefaultListenAddr,
		DefaultTimeout:           30 * time.Second,
		MaxCallTimeout:           DefaultMaxCallTimeout,
		ShutdownGrace:            10 * time.Second,
		MaxRecvMsgSize:           DefaultMsgSize,
		MaxSendMsgSize:           DefaultMsgSize,
		BackendMaxRecvMsgSize:    DefaultMsgSize,
		BackendMaxSendMsgSize:    DefaultMsgSize,
		BackendReconnectMaxDelay: backend.DefaultReconnectMaxDelay,
		BackendEjection:          backend.DefaultEjectionConfig(),
		Store:                    DefaultStoreConfig(),
		Policy:                   DemoPolicy(),
		MCP:                      MCPConfig{HTTP: DefaultMCPHTTPLimits()},
		GRPC:                     DefaultGRPCLimits(),
	}
}

// Validate reports every problem with the configuration at once, each
// naming the setting. It is the one validation: Start calls it first.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }

	// A durable store may already hold tools (and takes more through the
	// ToolRegistryService); a memory store would start empty.
	if c.ToolsFile == "" && len(c.Tools) == 0 && c.Store.Kind == StoreMemory {
		bad("no tools: give a tools file or tools to seed (the memory store starts empty)")
	}
	if c.Listeners.GRPC == nil {
		if msg := checkListenAddr(c.ListenAddr, false); msg != "" {
			bad("listen address %q: %s", c.ListenAddr, msg)
		}
	}
	if c.Listeners.MCP == nil {
		if msg := checkListenAddr(c.MCP.ListenAddr, true); msg != "" {
			bad("mcp listen address %q: %s", c.MCP.ListenAddr, msg)
		}
	}
	if c.Listeners.Admin == nil {
		if msg := checkListenAddr(c.Policy.Admin.ListenAddr, true); msg != "" {
			bad("policy: admin.listen_addr %q: %s", c.Policy.Admin.ListenAddr, msg)
		}
	}
	if err := c.MCP.HTTP.Validate("mcp"); err != nil {
		bad("%v", err)
	}
	if err := c.GRPC.validate(); err != nil {
		bad("%v", err)
	}
	if err := observe.CheckOKCallsLevel(c.OKCallsLevel); err != nil {
		bad("%v", err)
	}
	if _, err := repairstats.ParseCallerBy(c.RepairStatsCaller); err != nil {
		bad("%v", err)
	}
	for _, p := range c.LintProfiles {
		if _, ok := lint.ParseProfile(string(p)); !ok {
			bad("lint profile %q: unknown (want %s)", p, lint.ProfileNames())
		}
	}
	if c.DefaultTimeout <= 0 {
		bad("default timeout must be positive, got %v", c.DefaultTimeout)
	}
	if c.BackendMCPIdleConns < 0 {
		bad("backend MCP idle connections must not be negative, got %d", c.BackendMCPIdleConns)
	}
	if c.BackendMCPSubjectSessions < 0 {
		bad("backend MCP subject sessions must not be negative, got %d", c.BackendMCPSubjectSessions)
	}
	if c.BackendMCPSubjectSessionIdle < 0 {
		bad("backend MCP subject session idle time must not be negative, got %v", c.BackendMCPSubjectSessionIdle)
	}
	if c.BackendReconnectMaxDelay < 0 {
		bad("backend reconnect max delay must not be negative, got %v", c.BackendReconnectMaxDelay)
	}
	if err := c.BackendEjection.Validate(); err != nil {
		bad("%v", err)
	}
	if c.MaxCallTimeout <= 0 {
		bad("max call timeout must be positive, got %v", c.MaxCallTimeout)
	}
	if c.ShutdownGrace < 0 {
		bad("shutdown grace must not be negative, got %v", c.ShutdownGrace)
	}
	for _, s := range []struct {
		name string
		v    int
	}{
		{"max receive message size", c.MaxRecvMsgSize},
		{"max send message size", c.MaxSendMsgSize},
		{"backend max receive message size", c.BackendMaxRecvMsgSize},
		{"backend max send message size", c.BackendMaxSendMsgSize},
	} {
		if s.v <= 0 {
			bad("%s must be positive, got %d", s.name, s.v)
		}
	}
	errs = append(errs, c.Store.Validate(), c.Redis.Validate(), c.Policy.validate())
	if err := errors.Join(errs...); err != nil {
		return &ConfigError{err: err}
	}
	return nil
}

// ConfigError is Validate's error: every problem with a Config, each
// naming the setting.
type ConfigError struct{ err error }

func (e *ConfigError) Error() string { return e.err.Error() }
func (e *ConfigError) Unwrap() error { return e.err }

// checkListenAddr is THE listen-address rule: host:port with a port in
// 0..65535 and a host that is an IP address, "localhost" or empty (all
// interfaces) — a hostname would resolve at listen time to who knows what.
// It returns what is wrong, or "". An empty address is allowed (off) when
// optional.
func checkListenAddr(addr string, optional bool) string {
	if addr == "" && optional {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err.Error()
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Sprintf("port %q is not a number in 0..65535", port)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return `host must be an IP address, "localhost" or empty (all interfaces)`
	}
	return ""
}

func (c *Config) logger() *slog.Logger {
	l := c.Logger
	if l == nil {
		l = slog.Default()
	}
	// Every record bounded, whatever caller input reached it.
	return observe.BoundedLogger(l)
}

// DefaultMCPListenAddr is where cmd/flowdrop-gateway serves MCP by default
// (loopback only, next to the gRPC port).
const DefaultMCPListenAddr = "127.0.0.1:7444"

// MCPPath is the URL path of the MCP endpoint.
const MCPPath = mcpapi.Path

// MCPConfig configures the MCP endpoint.
type MCPConfig struct {
	// ListenAddr is the host:port of the HTTP listener serving MCPPath;
	// empty turns MCP off (unless Listeners.MCP is given).
	ListenAddr string
	// HTTP bounds the endpoint's connections: header, body and per-write
	// timeouts, the idle timeout and the connection cap (zero fields take
	// the defaults). The admin listener has the same header timeout, idle
	// timeout and connection cap.
	HTTP MCPHTTPLimits
	// SDKOnly answers every MCP request with the go-sdk's handler: the
	// tools/call fast path (server/mcpapi/fastpath.go) off, and tools/list
	// paged by the SDK over every tool, then filtered per caller
	// (server/mcpapi/toolslist.go).
	SDKOnly bool
}

// MCPHTTPLimits bound the MCP endpoint's HTTP connections.
type MCPHTTPLimits = mcpapi.HTTPLimits

// DefaultMCPHTTPLimits are the MCP endpoint's connection bounds by default.
func DefaultMCPHTTPLimits() MCPHTTPLimits { return httplimits.Defaults() }

// Listeners are listeners the caller opened (tests: on port 0, so the
// address is known before start). Each one given replaces its ListenAddr.
type Listeners struct {
	GRPC, MCP, Admin net.Listener
}

// lintProfiles are the profiles in force: LintProfiles, or the default.
func (c *Config) lintProfiles() []lint.Profile {
	if len(c.LintProfiles) > 0 {
		return c.LintProfiles
	}
	return registry.DefaultLintProfiles()
}
