package server

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		reason  string
		edit    func(*Config)
		wantErr []string // substrings; empty: valid
	}{
		{name: "defaults", reason: "the defaults must start a working gateway", edit: func(*Config) {}},
		{name: "tools-file-without-demo", reason: "a tools file alone is a valid source", edit: func(c *Config) { c.ToolsFile = "tools.yaml" }},
		{name: "all-interfaces", reason: "an empty host means all interfaces and is allowed", edit: func(c *Config) { c.ListenAddr = ":7443" }},
		{name: "no-port", reason: "an address without a port cannot be listened on", edit: func(c *Config) { c.ListenAddr = "127.0.0.1" }, wantErr: []string{"listen address", "127.0.0.1"}},
		{name: "bad-port", reason: "ports are 0..65535", edit: func(c *Config) { c.ListenAddr = "127.0.0.1:70000" }, wantErr: []string{"port \"70000\""}},
		{name: "hostname", reason: "a hostname would resolve to unknown interfaces", edit: func(c *Config) { c.ListenAddr = "example.com:1" }, wantErr: []string{"host must be an IP"}},
		{name: "no-tools", reason: "a memory-store gateway without tools is a mistake, not a default", edit: func(c *Config) { c.Store.Kind = StoreMemory }, wantErr: []string{"no tools"}},
		{name: "bad-store", reason: "store problems are reported with the rest", edit: func(c *Config) { c.Store.Kind = "disk" }, wantErr: []string{`store: unknown kind "disk"`}},
		{name: "zero-timeout", reason: "a zero default timeout would fail every call", edit: func(c *Config) { c.DefaultTimeout = 0 }, wantErr: []string{"default timeout"}},
		{name: "negative-grace", reason: "negative grace is meaningless", edit: func(c *Config) { c.ShutdownGrace = -1 }, wantErr: []string{"shutdown grace"}},
		{name: "zero-max-call-timeout", reason: "the gateway maximum caps every call; zero would fail them all", edit: func(c *Config) { c.MaxCallTimeout = 0 }, wantErr: []string{"max call timeout"}},
		{name: "negative-mcp-read-timeout", reason: "a negative MCP timeout is a mistake (zero takes the default)", edit: func(c *Config) { c.MCP.HTTP.ReadTimeout = -1 }, wantErr: []string{"mcp read_timeout"}},
		{name: "negative-mcp-max-connections", reason: "a negative connection cap is a mistake", edit: func(c *Config) { c.MCP.HTTP.MaxConnections = -1 }, wantErr: []string{"mcp max_connections"}},
		{name: "grpc-window-below-http2s", reason: "gRPC ignores a window under 65535 bytes: refused rather than silently unbounded", edit: func(c *Config) { c.GRPC.StreamWindow = 1024 }, wantErr: []string{"grpc stream_window must be at least 65535"}},
		{name: "grpc-negative-receive-timeout", reason: "a negative timeout is a mistake (zero takes the default)", edit: func(c *Config) { c.GRPC.UnauthenticatedReceiveTimeout = -1 }, wantErr: []string{"grpc unauthenticated_receive_timeout"}},
		{name: "grpc-negative-unauthenticated-streams", reason: "a negative cap is a mistake", edit: func(c *Config) { c.GRPC.MaxUnauthenticatedStreams = -1 }, wantErr: []string{"grpc max_unauthenticated_streams"}},
		{name: "grpc-tiny-header-cap", reason: "a header cap under 4 KiB would refuse ordinary credentials", edit: func(c *Config) { c.GRPC.MaxHeaderBytes = 100 }, wantErr: []string{"grpc max_header_bytes"}},
		{name: "grpc-zero-fields", reason: "zero gRPC bounds take the defaults, as the MCP ones do", edit: func(c *Config) { c.GRPC = GRPCLimits{} }},
		{name: "redis-addr-without-port", reason: "Redis is reached at host:port", edit: func(c *Config) { c.Redis.Addr = "redis.internal" }, wantErr: []string{"redis: addr"}},
		{name: "redis-settings-without-addr", reason: "a password file without an address is a forgotten --redis-addr", edit: func(c *Config) { c.Redis.PasswordFile = "pw" }, wantErr: []string{"redis"}},
		{name: "redis-cert-without-key", reason: "a client certificate needs its key", edit: func(c *Config) { c.Redis.Addr = "127.0.0.1:6379"; c.Redis.TLS.CertFile = "c.pem" }, wantErr: []string{"redis: tls cert and key"}},
		{name: "redis-negative-db", reason: "database indexes are 0 and up", edit: func(c *Config) { c.Redis.Addr = "127.0.0.1:6379"; c.Redis.DB = -1 }, wantErr: []string{"redis: db"}},
		{
			name:    "several-problems",
			reason:  "every problem is reported at once, each naming its setting",
			edit:    func(c *Config) { c.MaxRecvMsgSize = 0; c.BackendMaxSendMsgSize = -1 },
			wantErr: []string{"max receive message size must be positive, got 0", "backend max send message size must be positive, got -1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v (%s)", err, tc.reason)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted it (%s)", tc.reason)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q (%s)", err, s, tc.reason)
				}
			}
		})
	}
}

// TestStrictLintAppliesToSeededTools: a tools file is admitted like a
// registration, so --strict-lint refuses a seeded schema with lint errors
// (and without it the tool is served).
func TestStrictLintAppliesToSeededTools(t *testing.T) {
	t.Parallel()
	tool := registry.Tool{Name: "tagger", Backend: "127.0.0.1:1", InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
		"type": structpb.NewStringValue("object"),
		"properties": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"tags": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("array")}}),
		}}),
	}}}
	for _, strict := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Store.Kind, cfg.Tools, cfg.StrictLint = StoreMemory, []registry.Tool{tool}, strict
		cfg.ListenAddr = "127.0.0.1:0"
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		g, err := Start(t.Context(), cfg)
		if strict {
			if err == nil || !strings.Contains(err.Error(), "provider lint") {
				g.Close(t.Context())
				t.Fatalf("strict lint: Start = %v, want the seeded tool refused by provider lint", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("without strict lint: %v", err)
		}
		if _, ok := g.Registry().Lookup("tagger"); !ok {
			t.Error("without strict lint the tool is not served")
		}
		g.Close(t.Context())
	}
	// Enforcing only the profiles the deployment exports to: an array
	// without items is a warning for Anthropic, so the tool is served.
	cfg := DefaultConfig()
	cfg.Store.Kind, cfg.Tools, cfg.StrictLint, cfg.LintProfiles = StoreMemory, []registry.Tool{tool}, true, []lint.Profile{lint.Anthropic}
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("strict lint for anthropic only: %v", err)
	}
	if _, ok := g.Registry().Lookup("tagger"); !ok {
		t.Error("strict lint for anthropic only: the tool is not served")
	}
	g.Close(t.Context())
	cfg.LintProfiles = []lint.Profile{"claude"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `lint profile "claude"`) {
		t.Errorf("an unknown lint profile: Validate = %v, want it refused by name", err)
	}
}
