// Package gatewaytest starts a real gateway and the example tool service on
// 127.0.0.1 loopback for tests, and tears both down with t.Cleanup.
package gatewaytest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// Env is a running gateway with its backend.
type Env struct {
	// Addr is the gateway's address; Conn and Client are connected to it.
	Addr   string
	Conn   *grpc.ClientConn
	Client gatewayv1.ToolGatewayServiceClient
	Server *server.Server

	// Backend is the example tool service (recording every call it
	// receives); BackendAddr where it listens.
	Backend     *demotools.Service
	BackendAddr string

	Registry *registry.Registry
	Store    registry.Store

	// AdminURL is the admin listener's base URL ("http://127.0.0.1:port")
	// when WithAdmin was given.
	AdminURL string

	// MCPURL is the MCP endpoint's URL ("http://127.0.0.1:port/mcp") and MCP
	// its server, when WithMCP was given.
	MCPURL string
	MCP    *server.MCPServer
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
// 127.0.0.1 port (Env.MCPURL); it is shut down before the gateway.
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

	// The registry, seeded like Run does it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tools, err := registry.ParseTools(demotools.ToolsYAML(env.BackendAddr), "embedded demo tools")
	if err != nil {
		t.Fatalf("gatewaytest: demo tools: %v", err)
	}
	for _, mk := range o.tools {
		tools = append(tools, mk(env.BackendAddr))
	}
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := registry.Seed(ctx, store, tools); err != nil {
		t.Fatalf("gatewaytest: seed: %v", err)
	}
	reg := registry.New(store)
	if err := reg.Start(ctx); err != nil {
		t.Fatalf("gatewaytest: registry start: %v", err)
	}
	t.Cleanup(func() { reg.Close() })
	env.Registry, env.Store = reg, store

	// The gateway.
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Logger = logger
	for _, f := range o.cfg {
		f(&cfg)
	}
	srv, err := server.New(cfg, reg)
	if err != nil {
		t.Fatalf("gatewaytest: server.New: %v", err)
	}
	glis := Listen(t)
	env.Addr, env.Server = glis.Addr().String(), srv
	gdone := make(chan struct{})
	var adone chan struct{} // the admin listener's, if any; Shutdown closes it
	go func() { defer close(gdone); srv.Serve(glis) }()
	t.Cleanup(func() {
		// Bounded: a test that left a call hanging still finishes.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-gdone
		if adone != nil {
			<-adone
		}
	})

	if o.admin {
		alis := Listen(t)
		env.AdminURL = "http://" + alis.Addr().String()
		adone = make(chan struct{})
		go func() { defer close(adone); srv.ServeAdmin(alis) }()
	}

	if o.mcp {
		ms, err := server.NewMCPServer(srv, reg, cfg)
		if err != nil {
			t.Fatalf("gatewaytest: server.NewMCPServer: %v", err)
		}
		mlis := Listen(t)
		env.MCP, env.MCPURL = ms, "http://"+mlis.Addr().String()+server.MCPPath
		mdone := make(chan struct{})
		go func() { defer close(mdone); ms.Serve(mlis) }()
		// Registered after the gateway's cleanup, so it runs first (LIFO):
		// MCP calls use the gateway's backend connections.
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ms.Shutdown(sctx)
			<-mdone
		})
	}

	conn, err := grpc.NewClient(env.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("gatewaytest: dial gateway: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	env.Conn, env.Client = conn, gatewayv1.NewToolGatewayServiceClient(conn)
	return env
}

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
