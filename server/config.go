package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// DefaultListenAddr is where the gateway listens unless told otherwise:
// loopback only, so a newcomer's `go run` exposes nothing to the network.
const DefaultListenAddr = "127.0.0.1:7443"

// Config is everything the gateway needs to start. cmd/flowdrop-gateway fills
// it from flags; tests fill it directly. Call Validate before use.
type Config struct {
	// ListenAddr is the host:port the gRPC server listens on.
	ListenAddr string
	// ToolsFile is a declarative YAML or JSON tools file loaded into the
	// registry at start-up. Empty: the embedded demo tools (Demo must be set).
	ToolsFile string
	// Demo starts the example tool service in-process on a random loopback
	// port and, when ToolsFile is empty, registers the demo tools against it.
	Demo bool

	// Store is where the registry lives (bolt file by default, etcd for
	// replicas); the tools file and the demo tools seed it. See store.go.
	Store StoreConfig
	// StrictLint makes the ToolRegistryService refuse every schema with
	// provider-lint errors, as if each request set strict_lint.
	StrictLint bool

	// Policy is authentication, authorization, rules, limits, audit, the
	// admin listener and tracing (policy_config.go). Auth.Mode must be set
	// explicitly; DefaultConfig uses DemoPolicy (authentication off).
	Policy PolicyConfig

	// MCP is the Model Context Protocol endpoint (mcp.go): the same tools
	// and pipeline over streamable HTTP. Off unless MCP.ListenAddr is set.
	MCP MCPConfig

	// DefaultTimeout bounds a backend call when neither the caller's deadline
	// nor the tool's own timeout applies.
	DefaultTimeout time.Duration
	// ShutdownGrace is how long Run lets in-flight calls finish on shutdown
	// before it cuts them off.
	ShutdownGrace time.Duration

	// MaxRecvMsgSize and MaxSendMsgSize limit messages between agents and the
	// gateway, in bytes.
	MaxRecvMsgSize int
	MaxSendMsgSize int
	// BackendMaxRecvMsgSize and BackendMaxSendMsgSize limit messages between
	// the gateway and tool backends, in bytes.
	BackendMaxRecvMsgSize int
	BackendMaxSendMsgSize int

	// Logger receives structured logs. Nil: slog.Default().
	Logger *slog.Logger
	// Out receives the human start-up banner (where the gateway listens and a
	// ready-to-paste call). Nil: no banner.
	Out io.Writer
}

// DefaultMsgSize is gRPC's own default receive limit (4 MiB), made explicit.
const DefaultMsgSize = 4 << 20

// DefaultConfig returns a Config with every default filled in: listen on
// DefaultListenAddr with the demo tools.
func DefaultConfig() Config {
	return Config{
		ListenAddr:            DefaultListenAddr,
		Demo:                  true,
		DefaultTimeout:        30 * time.Second,
		ShutdownGrace:         10 * time.Second,
		MaxRecvMsgSize:        DefaultMsgSize,
		MaxSendMsgSize:        DefaultMsgSize,
		BackendMaxRecvMsgSize: DefaultMsgSize,
		BackendMaxSendMsgSize: DefaultMsgSize,
		Store:                 DefaultStoreConfig(),
		Policy:                DemoPolicy(),
	}
}

// Validate reports every problem with the configuration at once, each naming
// the setting.
func (c *Config) Validate() error {
	var errs []error
	// A durable store may already hold tools (and takes more through the
	// ToolRegistryService); a memory store would start empty.
	if c.ToolsFile == "" && !c.Demo && c.Store.Kind == StoreMemory {
		errs = append(errs, errors.New("config: no tools: give a tools file or enable the demo tools (the memory store starts empty)"))
	}
	errs = append(errs, c.Store.Validate(), c.MCP.validate())
	return errors.Join(append(errs, c.validateServer())...)
}

// validateServer checks what New needs (everything but the tool sources).
func (c *Config) validateServer() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }

	if host, port, err := net.SplitHostPort(c.ListenAddr); err != nil {
		bad("listen address %q: %v", c.ListenAddr, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("listen address %q: port %q is not a number in 0..65535", c.ListenAddr, port)
	} else if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		// A hostname would resolve at listen time to who knows what; be explicit.
		bad("listen address %q: host must be an IP address, \"localhost\" or empty (all interfaces)", c.ListenAddr)
	}
	if c.DefaultTimeout <= 0 {
		bad("default timeout must be positive, got %v", c.DefaultTimeout)
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
	errs = append(errs, c.Policy.validate())
	return errors.Join(errs...)
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
