package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/observe"
	"google.golang.org/grpc/credentials"
)

// PolicyConfig is the gateway's policy: who may call (Auth), what (Authz,
// Rules), how much (Limits, RateLimit), and what is recorded (Audit, Admin
// metrics, Tracing). Load it from a file with LoadPolicyFile.
type PolicyConfig struct {
	Auth      policy.AuthConfig
	Authz     policy.AuthzConfig
	Rules     []policy.Rule
	Limits    policy.Limits
	RateLimit policy.RateLimitConfig
	Audit     AuditConfig
	Admin     AdminConfig
	Tracing   TracingConfig
	// TLS serves gRPC over TLS; with ClientCAFile, verified client
	// certificates identify callers (auth.mtls).
	TLS TLSConfig
	// Normalize is what the normalize stage does beyond RT-TOOL-8.
	Normalize NormalizeConfig
	// BackendErrors is what of a backend's error status reaches callers.
	BackendErrors BackendErrorsConfig
	// SHA256 is the hex SHA-256 of the policy file's bytes (ParsePolicy
	// sets it; "" for a policy built in Go): the active policy's hash in
	// flowdrop_policy_info and /readyz.
	SHA256 string `json:"-"`
	// Idempotency is how idempotent calls' outcomes are kept (idempotency.go).
	Idempotency IdempotencyConfig
	// BackendTLS is transport security to backends by target (policy file
	// backend_tls), for tools whose spec sets no tls; none: plaintext.
	BackendTLS []backend.TargetTLS
	// MCPUpstreams is how upstream MCP tools are followed (server/mcpfollow).
	MCPUpstreams MCPUpstreamsConfig
	// Credentials are the only credential sources a tool may name, each
	// with the origins it may be sent to (credentials.go).
	Credentials []policy.CredentialSource
	// MCP is the MCP endpoint's policy (policy file section mcp).
	MCP MCPPolicy
	// UpstreamIdentity is who each upstream learns is calling: static,
	// passthrough, gateway-signed or token-exchange, per tool or per
	// upstream (server/identity; policy file upstream_identity).
	UpstreamIdentity identity.Config
}

// MCPPolicy is what the MCP endpoint lets in beyond authentication.
type MCPPolicy struct {
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with any other Origin header is
	// refused with 403 (mcpapi/origin.go). Requests without Origin (agents,
	// SDKs) are not affected. A reload replaces the list.
	AllowedOrigins []string
	// Discovery names the callers offered discovery mode (mcp.discovery:
	// all, callers by subject, roles): tools/list offers them the search
	// and describe meta-tools instead of every tool (mcpapi/discovery.go).
	// A reload replaces it.
	Discovery mcpapi.DiscoveryPolicy
}

// MCPUpstreamsConfig is how the gateway follows its upstream MCP servers,
// and the ones it runs.
type MCPUpstreamsConfig struct {
	// RelistInterval is how often each upstream's tools are re-listed
	// besides its list_changed notifications (0: DefaultMCPRelistInterval).
	RelistInterval time.Duration
	// Stdio are the MCP servers the gateway runs as processes (the stdio
	// transport), by the name a tool's mcp_tool.url gives: stdio://NAME.
	// Only this file says what runs; a registration only names one.
	Stdio map[string]mcpupstream.Command
	// AutoApprove are the kinds of upstream change (registry.ChangeKindNames)
	// applied to an imported tool without an admin's approval, when the
	// change has no other kind and no admin edited the tool; none (the
	// default): every change is held (internal/mcppin). A reload changes
	// it for the next re-list.
	AutoApprove []string
	// Bounds are what one listing of an upstream may hold (0: each
	// default, mcpimport.DefaultBounds): max_list_bytes, max_tools,
	// max_description_bytes, max_schema_bytes.
	Bounds mcpimport.Bounds
	// Input is how their requests for a caller's input are relayed
	// (mcp_upstreams.input).
	Input MCPInputConfig
}

// BackendErrorsConfig is what of a backend's error status reaches callers.
type BackendErrorsConfig struct {
	// PassDebugInfo keeps the backend's google.rpc.DebugInfo details
	// (default false: removed, since they carry stacks and internals).
	PassDebugInfo bool
}

// What the normalize stage does with an argument still changing when
// entity decoding reached its pass bound.
const (
	EntityBoundRefuse  = "refuse"  // InvalidArgument naming the path (the default)
	EntityBoundForward = "forward" // forward the value as left after the last pass
)

// NormalizeConfig is the normalize stage's policy.
type NormalizeConfig struct {
	// OnEntityBound is EntityBoundRefuse (also when empty) or
	// EntityBoundForward.
	OnEntityBound string
	// OptionalNulls is normalize.optional_nulls (policy.OptionalNullsKeep,
	// the default, or OptionalNullsDrop) with its per-tool overrides
	// (normalize.tools): an extension outside RT-TOOL-8.
	OptionalNulls policy.OptionalNullsConfig
}

// TLSConfig is the gRPC listener's TLS. Empty CertFile: plaintext.
type TLSConfig struct {
	CertFile, KeyFile string
	// ClientCAFile verifies client certificates when a client sends one
	// (other clients may still use API keys or JWTs).
	ClientCAFile string
}

// AuditConfig says where the audit log goes.
type AuditConfig struct {
	// Path of the JSON-lines file (appended, 0600); "-" is stdout; "" is off.
	Path string
	// RotateBytes rotates the file past this size (0: never).
	RotateBytes int64
	// KeepRotated keeps that many rotated files, the newest (0: all);
	// KeepRotatedFor removes rotated files older than it (0: none).
	KeepRotated    int
	KeepRotatedFor time.Duration
	// OnFailure is what a write failure (a full disk) does: AuditFailClosed
	// (the default: calls are refused while the log cannot be written) or
	// AuditFailOpen (calls go on; the loss is logged and counted).
	OnFailure string
}

// Audit failure modes (audit.on_failure).
const (
	AuditFailClosed = "fail-closed"
	AuditFailOpen   = "fail-open"
)

// AdminConfig is the HTTP admin listener (/metrics, /healthz, /readyz).
type AdminConfig struct {
	// ListenAddr is host:port; "" turns the admin listener off.
	ListenAddr string
}

// Tracing exporters.
const (
	TracingNone = observe.TracingNone
	TracingOTLP = observe.TracingOTLP
)

// TracingConfig selects the trace exporter (observe.TracingConfig).
type TracingConfig = observe.TracingConfig

// DefaultAdminAddr is where the demo serves /metrics, /healthz and /readyz.
const DefaultAdminAddr = "127.0.0.1:7445"

// DemoPolicy is the policy of `go run ./cmd/flowdrop-gateway` with no flags:
// authentication explicitly off (the gateway warns at start-up), every tool
// allowed, no audit log. The admin listener is off here, so programs and
// tests that call Run with DefaultConfig bind no fixed port; the binary's
// --admin-listen flag (default DefaultAdminAddr) turns it on.
func DemoPolicy() PolicyConfig {
	return PolicyConfig{
		Auth:    policy.AuthConfig{Mode: policy.AuthOff},
		Authz:   policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}}},
		Tracing: TracingConfig{Exporter: TracingNone},
	}
}

// validate checks what the policy constructors do not: modes and addresses.
// The constructors (run by Start) check keys, globs and CEL expressions.
func (c *PolicyConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: policy: "+format, args...)) }
	switch c.Auth.Mode {
	case policy.AuthOn, policy.AuthOff:
	case "":
		bad(`auth.mode is not set: write "on", or "off" to run without authentication (give --policy FILE or --auth-off)`)
	default:
		bad(`auth.mode %q: must be "on" or "off"`, c.Auth.Mode)
	}
	switch c.Tracing.Exporter {
	case "", TracingNone:
	case TracingOTLP:
		if c.Tracing.Endpoint == "" {
			bad(`tracing.endpoint is required when tracing.exporter is "otlp"`)
		}
	default:
		bad(`tracing.exporter %q: must be "none" or "otlp"`, c.Tracing.Exporter)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file and tls.key_file go together")
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		bad("tls.client_ca_file needs tls.cert_file and tls.key_file")
	}
	if c.Auth.MTLS != nil && c.TLS.ClientCAFile == "" {
		bad("auth.mtls needs tls.client_ca_file: only certificates the gateway verified identify callers")
	}
	if _, err := policy.NewCredentialSources(c.Credentials); err != nil {
		bad("%v", err) // names credentials[i] and the field
	}
	if err := identity.Check(c.UpstreamIdentity); err != nil {
		bad("%v", err) // names upstream_identity and the field; its files are read at start
	}
	if err := c.MCPUpstreams.Bounds.Check(); err != nil {
		bad("mcp_upstreams: %v", err)
	}
	if _, err := mcpapi.ParseOrigins(c.MCP.AllowedOrigins); err != nil {
		bad("%v", err) // names mcp.allowed_origins[i]
	}
	if d := c.MCPUpstreams.RelistInterval; d != 0 && d < time.Second {
		bad("mcp_upstreams.relist_interval %v: must be at least 1s (or unset: %v)", d, DefaultMCPRelistInterval)
	}
	c.MCPUpstreams.Input.validate(bad)
	if err := (mcppin.Policy{AutoApprove: c.MCPUpstreams.AutoApprove}).Check(); err != nil {
		bad("mcp_upstreams.auto_approve: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.MCPUpstreams.Stdio)) {
		cmd := c.MCPUpstreams.Stdio[name]
		at := "mcp_upstreams.stdio." + name
		switch {
		case !registry.ValidStdioName(name):
			bad("mcp_upstreams.stdio: name %q must match ^[a-z0-9_-]{1,64}$ (tools name it as stdio://NAME)", policy.Bound(name))
		case cmd.Path == "":
			bad("%s.command: must name the executable and its arguments", at)
		case !filepath.IsAbs(cmd.Path):
			bad("%s.command: the executable %q must be an absolute path (no search of the gateway's PATH)", at, cmd.Path)
		case cmd.Dir != "" && !filepath.IsAbs(cmd.Dir):
			bad("%s.dir %q: must be an absolute path", at, cmd.Dir)
		}
		for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
			if !policy.ValidEnvName(k) {
				bad("%s.env: %q is not an environment variable name", at, policy.Bound(k))
			}
		}
		for _, k := range cmd.PassEnv {
			if !policy.ValidEnvName(k) {
				bad("%s.pass_env: %q is not an environment variable name", at, policy.Bound(k))
			}
		}
	}
	switch c.Normalize.OnEntityBound {
	case "", EntityBoundRefuse, EntityBoundForward:
	default:
		bad(`normalize.on_entity_bound %q: must be "refuse" or "forward"`, c.Normalize.OnEntityBound)
	}
	if _, err := policy.NewOptionalNulls(c.Normalize.OptionalNulls); err != nil {
		bad("%v", err) // names normalize.optional_nulls or normalize.tools[i]
	}
	switch c.Limits.Mode {
	case "", policy.ModeEnforce, policy.ModeShadow:
	default:
		bad(`limits.mode %q: must be "enforce" or "shadow"`, c.Limits.Mode)
	}
	switch c.Audit.OnFailure {
	case "", AuditFailClosed, AuditFailOpen:
	default:
		bad(`audit.on_failure %q: must be "fail-closed" or "fail-open"`, c.Audit.OnFailure)
	}
	if c.Audit.RotateBytes < 0 {
		bad("audit.rotate_bytes must not be negative, got %d", c.Audit.RotateBytes)
	}
	if c.Audit.KeepRotated < 0 || c.Audit.KeepRotatedFor < 0 {
		bad("audit.keep_rotated and audit.keep_rotated_for must not be negative, got %d and %v", c.Audit.KeepRotated, c.Audit.KeepRotatedFor)
	}
	if (c.Audit.KeepRotated > 0 || c.Audit.KeepRotatedFor > 0) && c.Audit.RotateBytes == 0 {
		bad("audit.keep_rotated and audit.keep_rotated_for need audit.rotate_bytes (without rotation there is nothing to keep)")
	}
	if _, err := policy.NewRateLimiter(c.RateLimit); err != nil {
		bad("%v", err) // names rate_limit and the field
	}
	if err := c.Idempotency.validate(); err != nil {
		bad("%v", err)
	}
	if err := backend.CheckTargetTLS(c.BackendTLS); err != nil {
		bad("%v", err) // names backend_tls[i], the match and the file
	}
	for _, l := range []struct {
		name string
		v    int
	}{
		{"limits.max_argument_bytes", c.Limits.MaxArgumentBytes},
		{"limits.max_string_length", c.Limits.MaxStringLength},
		{"limits.max_depth", c.Limits.MaxDepth},
		{"limits.max_list_elements", c.Limits.MaxListElements},
		{"limits.max_object_keys", c.Limits.MaxObjectKeys},
		{"limits.max_in_flight_per_tool", c.Limits.MaxInFlightPerTool},
		{"limits.max_validation_steps", c.Limits.MaxValidationSteps},
		{"limits.max_schema_evaluations", c.Limits.MaxSchemaEvaluations},
	} {
		if l.v < 0 {
			bad("%s must not be negative, got %d", l.name, l.v)
		}
	}
	return errors.Join(errs...)
}

// serverCredentials loads the TLS files (nil, nil: plaintext).
func (c *TLSConfig) serverCredentials() (credentials.TransportCredentials, error) {
	if c.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("config: policy: tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("config: policy: tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("config: policy: tls.client_ca_file %s: no PEM certificates", c.ClientCAFile)
		}
		// If given: a client may instead authenticate with an API key or JWT.
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return credentials.NewTLS(tc), nil
}
