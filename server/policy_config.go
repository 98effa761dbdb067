package server

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/observe"
	"google.golang.org/grpc/credentials"
	"sigs.k8s.io/yaml"
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
}

// MCPPolicy is what the MCP endpoint lets in beyond authentication.
type MCPPolicy struct {
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with any other Origin header is
	// refused with 403 (mcpapi/origin.go). Requests without Origin (agents,
	// SDKs) are not affected. A reload replaces the list.
	AllowedOrigins []string
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
	if err := c.MCPUpstreams.Bounds.Check(); err != nil {
		bad("mcp_upstreams: %v", err)
	}
	if _, err := mcpapi.ParseOrigins(c.MCP.AllowedOrigins); err != nil {
		bad("%v", err) // names mcp.allowed_origins[i]
	}
	if d := c.MCPUpstreams.RelistInterval; d != 0 && d < time.Second {
		bad("mcp_upstreams.relist_interval %v: must be at least 1s (or unset: %v)", d, DefaultMCPRelistInterval)
	}
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

// The policy file: YAML or JSON, snake_case keys, unknown keys refused.
type policyFile struct {
	Auth struct {
		Mode           authMode `json:"mode"`
		AnonymousRoles []string `json:"anonymous_roles"`
		APIKeys        []struct {
			Name   string   `json:"name"`
			SHA256 string   `json:"sha256"`
			Roles  []string `json:"roles"`
		} `json:"api_keys"`
		JWT *struct {
			Issuer          string   `json:"issuer"`
			Audience        string   `json:"audience"`
			JWKSFile        string   `json:"jwks_file"`
			JWKSURL         string   `json:"jwks_url"`
			RoleClaim       string   `json:"role_claim"`
			Leeway          duration `json:"leeway"`
			Algorithms      []string `json:"algorithms"`
			FetchTimeout    duration `json:"fetch_timeout"`
			RefreshInterval duration `json:"refresh_interval"`
			// Published to MCP clients (RFC 9728 discovery).
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		} `json:"jwt"`
		MTLS *struct {
			SubjectFrom  string              `json:"subject_from"`
			Roles        map[string][]string `json:"roles"`
			DefaultRoles []string            `json:"default_roles"`
		} `json:"mtls"`
	} `json:"auth"`
	Authz struct {
		MethodRoles map[string][]string   `json:"method_roles"`
		Callers     map[string]toolAccess `json:"callers"`
		Default     toolAccess            `json:"default"`
	} `json:"authz"`
	Rules []struct {
		Name    string   `json:"name"`
		Tools   []string `json:"tools"`
		Expr    string   `json:"expr"`
		Message string   `json:"message"`
		Mode    string   `json:"mode"`
	} `json:"rules"`
	Limits struct {
		MaxArgumentBytes     int    `json:"max_argument_bytes"`
		MaxStringLength      int    `json:"max_string_length"`
		MaxDepth             int    `json:"max_depth"`
		MaxListElements      int    `json:"max_list_elements"`
		MaxObjectKeys        int    `json:"max_object_keys"`
		MaxInFlightPerTool   int    `json:"max_in_flight_per_tool"`
		MaxValidationSteps   int    `json:"max_validation_steps"`
		MaxSchemaEvaluations int    `json:"max_schema_evaluations"`
		Mode                 string `json:"mode"`
	} `json:"limits"`
	RateLimit struct {
		Rate  float64 `json:"rate"`
		Burst int     `json:"burst"`
		Tools []struct {
			Match string  `json:"match"`
			Rate  float64 `json:"rate"`
			Burst int     `json:"burst"`
		} `json:"tools"`
		MaxBuckets  int      `json:"max_buckets"`
		IdleTimeout duration `json:"idle_timeout"`
		Registry    struct {
			Rate  float64 `json:"rate"`
			Burst int     `json:"burst"`
		} `json:"registry"`
		Fallback string `json:"fallback"`
		Mode     string `json:"mode"`
	} `json:"rate_limit"`
	Audit struct {
		Path        string `json:"path"`
		RotateBytes int64  `json:"rotate_bytes"`
		OnFailure   string `json:"on_failure"`
	} `json:"audit"`
	Admin struct {
		ListenAddr *string `json:"listen_addr"`
	} `json:"admin"`
	TLS struct {
		CertFile     string `json:"cert_file"`
		KeyFile      string `json:"key_file"`
		ClientCAFile string `json:"client_ca_file"`
	} `json:"tls"`
	Tracing struct {
		Exporter string `json:"exporter"`
		Endpoint string `json:"endpoint"`
		Insecure bool   `json:"insecure"`
	} `json:"tracing"`
	Normalize struct {
		OnEntityBound string `json:"on_entity_bound"`
		OptionalNulls string `json:"optional_nulls"`
		Tools         []struct {
			Match         string `json:"match"`
			OptionalNulls string `json:"optional_nulls"`
		} `json:"tools"`
	} `json:"normalize"`
	BackendErrors struct {
		PassDebugInfo bool `json:"pass_debug_info"`
	} `json:"backend_errors"`
	Idempotency struct {
		TTL            duration `json:"ttl"`
		MaxResultBytes int      `json:"max_result_bytes"`
		MaxEntries     int      `json:"max_entries"`
	} `json:"idempotency"`
	BackendTLS []struct {
		Match      string `json:"match"`
		CAFile     string `json:"ca_file"`
		CertFile   string `json:"cert_file"`
		KeyFile    string `json:"key_file"`
		ServerName string `json:"server_name"`
		Require    bool   `json:"require"`
	} `json:"backend_tls"`
	Credentials []struct {
		Env     string   `json:"env"`
		File    string   `json:"file"`
		Origins []string `json:"origins"`
	} `json:"credentials"`
	MCPUpstreams struct {
		RelistInterval      duration `json:"relist_interval"`
		AutoApprove         []string `json:"auto_approve"`
		MaxListBytes        int64    `json:"max_list_bytes"`
		MaxTools            int      `json:"max_tools"`
		MaxDescriptionBytes int      `json:"max_description_bytes"`
		MaxSchemaBytes      int      `json:"max_schema_bytes"`
		Stdio               map[string]struct {
			Command []string          `json:"command"`
			Env     map[string]string `json:"env"`
			PassEnv []string          `json:"pass_env"`
			Dir     string            `json:"dir"`
		} `json:"stdio"`
	} `json:"mcp_upstreams"`
	MCP struct {
		AllowedOrigins []string `json:"allowed_origins"`
	} `json:"mcp"`
}

type toolAccess struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	Mode  string   `json:"mode"`
}

// authMode accepts "on"/"off" and also YAML 1.1's reading of a bare
// on/off as true/false (`mode: on` must not be a type error).
type authMode string

func (m *authMode) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case "true":
		*m = policy.AuthOn
	case "false":
		*m = policy.AuthOff
	default:
		*m = authMode(strings.Trim(s, `"`))
	}
	return nil
}

// duration is a time.Duration written as "30s" in the file.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want e.g. \"30s\" or \"5m\"", s)
	}
	*d = duration(v)
	return nil
}

// LoadPolicyFile reads a YAML or JSON policy file. Unknown keys are errors
// (a typo must not silently drop a rule), and errors name the file and field.
func LoadPolicyFile(path string) (PolicyConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PolicyConfig{}, fmt.Errorf("policy file: %w", err)
	}
	return ParsePolicy(b, path)
}

// ParsePolicy parses a policy file's contents; source names it in errors.
func ParsePolicy(b []byte, source string) (PolicyConfig, error) {
	var f policyFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return PolicyConfig{}, fmt.Errorf("policy file %s: %w", source, err)
	}
	c := PolicyConfig{
		Auth: policy.AuthConfig{Mode: string(f.Auth.Mode), AnonymousRoles: f.Auth.AnonymousRoles},
		Authz: policy.AuthzConfig{MethodRoles: f.Authz.MethodRoles,
			Default: policy.ToolAccess(f.Authz.Default)},
		Limits: policy.Limits(f.Limits),
		RateLimit: policy.RateLimitConfig{Rate: f.RateLimit.Rate, Burst: f.RateLimit.Burst, MaxBuckets: f.RateLimit.MaxBuckets, IdleTimeout: time.Duration(f.RateLimit.IdleTimeout),
			Registry: policy.MethodRate(f.RateLimit.Registry), Fallback: f.RateLimit.Fallback, Mode: f.RateLimit.Mode},
		Audit:   AuditConfig(f.Audit),
		TLS:     TLSConfig(f.TLS),
		Tracing: TracingConfig{Exporter: f.Tracing.Exporter, Endpoint: f.Tracing.Endpoint, Insecure: f.Tracing.Insecure},
		Normalize: NormalizeConfig{OnEntityBound: f.Normalize.OnEntityBound,
			OptionalNulls: policy.OptionalNullsConfig{Mode: f.Normalize.OptionalNulls}},
	}
	for _, o := range f.Normalize.Tools {
		c.Normalize.OptionalNulls.Tools = append(c.Normalize.OptionalNulls.Tools, policy.ToolOptionalNulls{Match: o.Match, Mode: o.OptionalNulls})
	}
	c.BackendErrors.PassDebugInfo = f.BackendErrors.PassDebugInfo
	c.MCP.AllowedOrigins = f.MCP.AllowedOrigins
	c.MCPUpstreams.RelistInterval = time.Duration(f.MCPUpstreams.RelistInterval)
	c.MCPUpstreams.AutoApprove = f.MCPUpstreams.AutoApprove
	for _, cs := range f.Credentials {
		c.Credentials = append(c.Credentials, policy.CredentialSource{Env: cs.Env, File: cs.File, Origins: cs.Origins})
	}
	c.MCPUpstreams.Bounds = mcpimport.Bounds{ListBytes: f.MCPUpstreams.MaxListBytes, Tools: f.MCPUpstreams.MaxTools,
		DescriptionBytes: f.MCPUpstreams.MaxDescriptionBytes, SchemaBytes: f.MCPUpstreams.MaxSchemaBytes}
	for name, sc := range f.MCPUpstreams.Stdio {
		cmd := mcpupstream.Command{Env: sc.Env, PassEnv: sc.PassEnv, Dir: sc.Dir}
		if len(sc.Command) > 0 {
			cmd.Path, cmd.Args = sc.Command[0], sc.Command[1:]
		}
		if c.MCPUpstreams.Stdio == nil {
			c.MCPUpstreams.Stdio = map[string]mcpupstream.Command{}
		}
		c.MCPUpstreams.Stdio[name] = cmd
	}
	sum := sha256.Sum256(b)
	c.SHA256 = hex.EncodeToString(sum[:])
	c.Idempotency = IdempotencyConfig{TTL: time.Duration(f.Idempotency.TTL), MaxResultBytes: f.Idempotency.MaxResultBytes, MaxEntries: f.Idempotency.MaxEntries}
	for _, e := range f.BackendTLS {
		c.BackendTLS = append(c.BackendTLS, backend.TargetTLS{Match: e.Match, TLS: registry.TransportSecurity{
			CAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile, ServerName: e.ServerName, Require: e.Require}})
	}
	for _, k := range f.Auth.APIKeys {
		c.Auth.APIKeys = append(c.Auth.APIKeys, policy.APIKey{Name: k.Name, SHA256: k.SHA256, Roles: k.Roles})
	}
	for _, o := range f.RateLimit.Tools {
		c.RateLimit.Tools = append(c.RateLimit.Tools, policy.ToolRate(o))
	}
	if j := f.Auth.JWT; j != nil {
		c.Auth.JWT = &policy.JWTConfig{Issuer: j.Issuer, Audience: j.Audience, JWKSFile: j.JWKSFile, JWKSURL: j.JWKSURL,
			RoleClaim: j.RoleClaim, Leeway: time.Duration(j.Leeway), Algorithms: j.Algorithms,
			FetchTimeout: time.Duration(j.FetchTimeout), RefreshInterval: time.Duration(j.RefreshInterval),
			Resource: j.Resource, AuthorizationServers: j.AuthorizationServers, ScopesSupported: j.ScopesSupported}
	}
	if m := f.Auth.MTLS; m != nil {
		c.Auth.MTLS = &policy.MTLSConfig{SubjectFrom: m.SubjectFrom, Roles: m.Roles, DefaultRoles: m.DefaultRoles}
	}
	if len(f.Authz.Callers) > 0 {
		c.Authz.Callers = map[string]policy.ToolAccess{}
		for k, v := range f.Authz.Callers {
			c.Authz.Callers[k] = policy.ToolAccess(v)
		}
	}
	for _, r := range f.Rules {
		c.Rules = append(c.Rules, policy.Rule{Name: r.Name, Tools: r.Tools, Expr: r.Expr, Message: r.Message, Mode: r.Mode})
	}
	// The admin listener is on by default; `listen_addr: ""` turns it off.
	c.Admin.ListenAddr = DefaultAdminAddr
	if f.Admin.ListenAddr != nil {
		c.Admin.ListenAddr = *f.Admin.ListenAddr
	}
	if c.Tracing.Exporter == "" {
		c.Tracing.Exporter = TracingNone
	}
	if err := c.validate(); err != nil {
		return PolicyConfig{}, fmt.Errorf("policy file %s: %w", source, err)
	}
	return c, nil
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
