package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/mcpapi"
	"sigs.k8s.io/yaml"
)

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
		Path           string   `json:"path"`
		RotateBytes    int64    `json:"rotate_bytes"`
		KeepRotated    int      `json:"keep_rotated"`
		KeepRotatedFor duration `json:"keep_rotated_for"`
		OnFailure      string   `json:"on_failure"`
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
		Input struct {
			KeyFiles []string            `json:"key_files"`
			StateTTL duration            `json:"state_ttl"`
			Forbid   map[string][]string `json:"forbid"`
		} `json:"input"`
	} `json:"mcp_upstreams"`
	MCP struct {
		AllowedOrigins []string `json:"allowed_origins"`
		Discovery      struct {
			All     bool     `json:"all"`
			Callers []string `json:"callers"`
			Roles   []string `json:"roles"`
		} `json:"discovery"`
	} `json:"mcp"`
	UpstreamIdentity struct {
		Default   string         `json:"default"`
		Tools     []identityRule `json:"tools"`
		Upstreams []identityRule `json:"upstreams"`
		Signing   *struct {
			Issuer   string   `json:"issuer"`
			KeyFiles []string `json:"key_files"`
			TTL      duration `json:"ttl"`
		} `json:"signing"`
		TokenExchange *struct {
			TokenURL         string   `json:"token_url"`
			ClientID         string   `json:"client_id"`
			ClientSecretFile string   `json:"client_secret_file"`
			Timeout          duration `json:"timeout"`
			MaxCached        int      `json:"max_cached"`
			RefreshBefore    duration `json:"refresh_before"`
		} `json:"token_exchange"`
		UserConsent *struct {
			RedirectURL   string   `json:"redirect_url"`
			KeyFiles      []string `json:"key_files"`
			StateTTL      duration `json:"state_ttl"`
			RefreshBefore duration `json:"refresh_before"`
			MaxTokens     int      `json:"max_tokens"`
			Timeout       duration `json:"timeout"`
			Store         struct {
				BoltFile string `json:"bolt_file"`
				Redis    bool   `json:"redis"`
			} `json:"store"`
			Clients []struct {
				Name             string   `json:"name"`
				Issuer           string   `json:"issuer"`
				AuthURL          string   `json:"auth_url"`
				TokenURL         string   `json:"token_url"`
				ClientID         string   `json:"client_id"`
				ClientSecretFile string   `json:"client_secret_file"`
				Scopes           []string `json:"scopes"`
			} `json:"clients"`
			VerifyCaller *struct {
				Issuer           string   `json:"issuer"`
				ClientID         string   `json:"client_id"`
				ClientSecretFile string   `json:"client_secret_file"`
				Scopes           []string `json:"scopes"`
			} `json:"verify_caller"`
		} `json:"user_consent"`
	} `json:"upstream_identity"`
}

type identityRule struct {
	Match    string `json:"match"`
	Mode     string `json:"mode"`
	Audience string `json:"audience"`
	// OAuthClient is the user-consent mode's client (user_consent.clients).
	OAuthClient string `json:"oauth_client"`
}

// identityConfig is the file's upstream_identity as identity.Config.
func (f *policyFile) identityConfig() identity.Config {
	u := f.UpstreamIdentity
	c := identity.Config{Default: identity.Mode(u.Default)}
	for _, r := range u.Tools {
		c.Tools = append(c.Tools, identity.Rule{Match: r.Match, Mode: identity.Mode(r.Mode), Audience: r.Audience, Client: r.OAuthClient})
	}
	for _, r := range u.Upstreams {
		c.Upstreams = append(c.Upstreams, identity.Rule{Match: r.Match, Mode: identity.Mode(r.Mode), Audience: r.Audience, Client: r.OAuthClient})
	}
	if s := u.Signing; s != nil {
		c.Signing = &identity.SigningConfig{Issuer: s.Issuer, KeyFiles: s.KeyFiles, TTL: time.Duration(s.TTL)}
	}
	if x := u.TokenExchange; x != nil {
		c.Exchange = &identity.ExchangeConfig{TokenURL: x.TokenURL, ClientID: x.ClientID, ClientSecretFile: x.ClientSecretFile,
			Timeout: time.Duration(x.Timeout), MaxCached: x.MaxCached, RefreshBefore: time.Duration(x.RefreshBefore)}
	}
	if uc := u.UserConsent; uc != nil {
		k := &identity.ConsentConfig{RedirectURL: uc.RedirectURL, KeyFiles: uc.KeyFiles, StateTTL: time.Duration(uc.StateTTL),
			RefreshBefore: time.Duration(uc.RefreshBefore), MaxTokens: uc.MaxTokens, Timeout: time.Duration(uc.Timeout),
			BoltFile: uc.Store.BoltFile, Redis: uc.Store.Redis}
		for _, cl := range uc.Clients {
			k.Clients = append(k.Clients, identity.OAuthClient{Name: cl.Name, Issuer: cl.Issuer, AuthURL: cl.AuthURL, TokenURL: cl.TokenURL,
				ClientID: cl.ClientID, ClientSecretFile: cl.ClientSecretFile, Scopes: cl.Scopes})
		}
		if v := uc.VerifyCaller; v != nil {
			k.VerifyCaller = &identity.VerifyCaller{Issuer: v.Issuer, ClientID: v.ClientID, ClientSecretFile: v.ClientSecretFile, Scopes: v.Scopes}
		}
		c.Consent = k
	}
	return c
}

type toolAccess struct {
	Allow     []string         `json:"allow"`
	Deny      []string         `json:"deny"`
	Mode      string           `json:"mode"`
	Resources policy.URIAccess `json:"resources"`
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
		Audit: AuditConfig{Path: f.Audit.Path, RotateBytes: f.Audit.RotateBytes, KeepRotated: f.Audit.KeepRotated,
			KeepRotatedFor: time.Duration(f.Audit.KeepRotatedFor), OnFailure: f.Audit.OnFailure},
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
	c.MCP.Discovery = mcpapi.DiscoveryPolicy(f.MCP.Discovery)
	c.UpstreamIdentity = f.identityConfig()
	c.MCPUpstreams.RelistInterval = time.Duration(f.MCPUpstreams.RelistInterval)
	c.MCPUpstreams.AutoApprove = f.MCPUpstreams.AutoApprove
	c.MCPUpstreams.Input = MCPInputConfig{KeyFiles: f.MCPUpstreams.Input.KeyFiles, StateTTL: time.Duration(f.MCPUpstreams.Input.StateTTL),
		Forbid: f.MCPUpstreams.Input.Forbid}
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
