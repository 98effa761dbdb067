package gatewaytest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// Env is a running gateway with its backend.
type Env struct {
	// Addr is the gateway's address; Conn and Client are connected to it.
	Addr    string
	Conn    *grpc.ClientConn
	Client  gatewayv1.ToolGatewayServiceClient
	Gateway *server.Gateway

	// Backend is the example tool service (recording every call it
	// receives); BackendAddr where it listens.
	Backend     *demotools.Service
	BackendAddr string

	Registry *registry.Registry
	Store    registry.Store

	// AdminURL is the admin listener's base URL ("http://127.0.0.1:port")
	// when WithAdmin was given.
	AdminURL string

	// MCPURL is the MCP endpoint's URL ("http://127.0.0.1:port/mcp") when
	// WithMCP was given.
	MCPURL string
}

type options struct {
	noRecord bool
	cfg      []func(*server.Config)
	admin    bool
	mcp      bool
	tools    []func(backend string) registry.Tool
	handlers []demotools.Option
	logOut   io.Writer
}

// Option configures Start.
type Option func(*options)

// WithConfig edits the gateway's Config before it starts (in order, after
// any earlier WithConfig or WithPolicy).
func WithConfig(f func(*server.Config)) Option { return func(o *options) { o.cfg = append(o.cfg, f) } }

// WithPolicy replaces the gateway's policy (default: server.DemoPolicy,
// authentication off). The admin listener is started only by WithAdmin.
func WithPolicy(p server.PolicyConfig) Option {
	return WithConfig(func(c *server.Config) { c.Policy = p })
}

// WithAdmin serves the admin endpoints (/metrics, /healthz, /readyz) on a
// free 127.0.0.1 port; Env.AdminURL says where.
func WithAdmin() Option { return func(o *options) { o.admin = true } }

// WithMCP also serves the gateway's MCP endpoint over HTTP on a free
// 127.0.0.1 port (Env.MCPURL).
func WithMCP() Option { return func(o *options) { o.mcp = true } }

// WithTool registers an extra tool; mk receives the example backend's address.
func WithTool(mk func(backend string) registry.Tool) Option {
	return func(o *options) { o.tools = append(o.tools, mk) }
}

// WithBackendHandler gives the example backend a handler for a tool name.
func WithBackendHandler(tool string, h demotools.HandlerFunc) Option {
	return func(o *options) { o.handlers = append(o.handlers, demotools.WithHandler(tool, h)) }
}

// WithoutRecording stops the backend keeping every call (for benchmarks).
func WithoutRecording() Option { return func(o *options) { o.noRecord = true } }

// WithLogOutput sends the gateway's logs to w (default: discarded).
func WithLogOutput(w io.Writer) Option { return func(o *options) { o.logOut = w } }

// ObjectTool is a tool whose schema accepts any object, served by backend.
func ObjectTool(name string) func(backend string) registry.Tool {
	return func(backend string) registry.Tool {
		return registry.Tool{Name: name, Backend: backend, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
			"type": structpb.NewStringValue("object"),
		}}}
	}
}

// Start runs the example tool service and a gateway with the demo tools (plus
// any WithTool tools) on 127.0.0.1, and a client connected to the gateway.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := options{}
	for _, f := range opts {
		f(&o)
	}
	logOut := o.logOut
	if logOut == nil {
		logOut = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logOut, nil))
	bopts := o.handlers
	if !o.noRecord {
		bopts = append(bopts, demotools.WithRecording())
	}
	env := &Env{Backend: demotools.New(bopts...)}

	// The example backend.
	blis := Listen(t)
	env.BackendAddr = blis.Addr().String()
	bs := demotools.NewGRPCServer(env.Backend, nil)
	bdone := make(chan struct{})
	go func() { defer close(bdone); bs.Serve(blis) }()
	t.Cleanup(func() { bs.Stop(); <-bdone })

	// The gateway, on a memory store seeded with the demo tools.
	tools, err := registry.ParseTools(demotools.ToolsYAML(env.BackendAddr), "embedded demo tools")
	if err != nil {
		t.Fatalf("gatewaytest: demo tools: %v", err)
	}
	for _, mk := range o.tools {
		tools = append(tools, mk(env.BackendAddr))
	}
	cfg := server.DefaultConfig()
	cfg.Store.Kind, cfg.Tools, cfg.Logger = server.StoreMemory, tools, logger
	cfg.Listeners.GRPC = Listen(t)
	if o.admin {
		cfg.Listeners.Admin = Listen(t)
	}
	if o.mcp {
		cfg.Listeners.MCP = Listen(t)
	}
	cfg.DisableFastPaths = FastPathsOff()
	for _, f := range o.cfg {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("gatewaytest: server.Start: %v", err)
	}
	t.Cleanup(func() {
		// Bounded: a test that left a call hanging still finishes.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Close(sctx)
	})
	env.Gateway, env.Addr, env.Registry, env.Store = g, g.GRPCAddr(), g.Registry(), g.Store()
	if a := g.AdminAddr(); a != "" {
		env.AdminURL = "http://" + a
	}
	env.MCPURL = g.MCPURL()

	conn, err := grpc.NewClient(env.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("gatewaytest: dial gateway: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	env.Conn, env.Client = conn, gatewayv1.NewToolGatewayServiceClient(conn)
	return env
}

// FastPathsOffEnv, set to 1, starts every test gateway with its fast paths
// off (server.Config.DisableFastPaths): .ci/run runs the end-to-end suite
// that way too.
const FastPathsOffEnv = "FLOWDROP_FAST_PATHS_OFF"

// FastPathsOff reports whether FastPathsOffEnv asks for the general paths.
func FastPathsOff() bool { return os.Getenv(FastPathsOffEnv) == "1" }

// Listen returns a listener on a free 127.0.0.1 port, closed at cleanup.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	t.Cleanup(func() { lis.Close() })
	return lis
}

// ClosedAddr returns a 127.0.0.1 address nothing listens on (a port that
// was free a moment ago), for "backend down" tests.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// Args builds a Struct from a Go map, failing the test on bad input.
func Args(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("gatewaytest: args: %v", err)
	}
	return s
}
