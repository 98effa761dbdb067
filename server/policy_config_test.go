package server

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/identity"
)

// TestLoadPolicyFileExample: the documented example loads, with every section mapped.
func TestLoadPolicyFileExample(t *testing.T) {
	p, err := LoadPolicyFile(filepath.Join("testdata", "policy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		reason string
		ok     bool
	}{
		{"auth.mode", p.Auth.Mode == policy.AuthOn},
		{"api keys with roles", len(p.Auth.APIKeys) == 2 && p.Auth.APIKeys[0].Roles[0] == policy.RoleInvoker},
		{"jwt with a parsed leeway", p.Auth.JWT != nil && p.Auth.JWT.Leeway == 30*time.Second && p.Auth.JWT.Audience == "flowdrop-gateway"},
		{"mtls roles", p.Auth.MTLS != nil && len(p.Auth.MTLS.Roles["spiffe://example.com/agent"]) == 1},
		{"authz callers", len(p.Authz.Callers["ci-agent"].Deny) == 1 && p.Authz.Default.Allow[0] == "*"},
		{"authz resources", slices.Equal(p.Authz.Callers["ci-agent"].Resources.Allow, []string{"flowdrop-mcp://docs_/*"}) &&
			slices.Equal(p.Authz.Callers["ci-agent"].Resources.Deny, []string{"*/private/*"})},
		{"rules", len(p.Rules) == 2 && p.Rules[0].Tools[0] == "run_command"},
		{"a shadow rule", p.Rules[1].Mode == policy.ModeShadow && p.Rules[0].Mode == ""},
		{"limits", p.Limits.MaxDepth == 16 && p.Limits.MaxInFlightPerTool == 64},
		{"rate limit", p.RateLimit.Rate == 10 && p.RateLimit.Burst == 20 && p.RateLimit.IdleTimeout == 10*time.Minute},
		{"per-tool rate limit", len(p.RateLimit.Tools) == 1 && p.RateLimit.Tools[0] == policy.ToolRate{Match: "run_*", Rate: 1, Burst: 2}},
		{"registry rate limit", p.RateLimit.Registry == policy.MethodRate{Rate: 50, Burst: 100}},
		{"audit", p.Audit.RotateBytes == 104857600 && p.Audit.OnFailure == AuditFailClosed},
		{"admin", p.Admin.ListenAddr == "127.0.0.1:7445"},
		{"upstream identity rules", p.UpstreamIdentity.Default == identity.Static && len(p.UpstreamIdentity.Tools) == 1 &&
			p.UpstreamIdentity.Tools[0].Mode == identity.GatewaySigned && len(p.UpstreamIdentity.Upstreams) == 3 &&
			p.UpstreamIdentity.Upstreams[1].Mode == identity.TokenExchange},
		{"upstream identity user consent", p.UpstreamIdentity.Upstreams[2].Mode == identity.UserConsent && p.UpstreamIdentity.Upstreams[2].Client == "github" &&
			p.UpstreamIdentity.Consent != nil && p.UpstreamIdentity.Consent.BoltFile == "/var/lib/flowdrop/usertokens.db" && !p.UpstreamIdentity.Consent.Redis &&
			p.UpstreamIdentity.Consent.StateTTL == 10*time.Minute && p.UpstreamIdentity.Consent.RefreshBefore == time.Minute &&
			p.UpstreamIdentity.Consent.MaxTokens == 100000 && len(p.UpstreamIdentity.Consent.Clients) == 1 &&
			p.UpstreamIdentity.Consent.Clients[0].TokenURL == "https://github.example/login/oauth/access_token" &&
			slices.Equal(p.UpstreamIdentity.Consent.Clients[0].Scopes, []string{"repo"})},
		{"user consent verify_caller", p.UpstreamIdentity.Consent != nil && p.UpstreamIdentity.Consent.VerifyCaller != nil &&
			p.UpstreamIdentity.Consent.VerifyCaller.Issuer == "https://login.example.com" && p.UpstreamIdentity.Consent.VerifyCaller.ClientID == "flowdrop-gateway-login" &&
			p.UpstreamIdentity.Consent.VerifyCaller.ClientSecretFile == "/etc/flowdrop/identity/login-secret" &&
			slices.Equal(p.UpstreamIdentity.Consent.VerifyCaller.Scopes, []string{"openid"})},
		{"upstream identity signing and exchange", p.UpstreamIdentity.Signing != nil && len(p.UpstreamIdentity.Signing.KeyFiles) == 2 &&
			p.UpstreamIdentity.Signing.TTL == time.Minute && p.UpstreamIdentity.Exchange != nil &&
			p.UpstreamIdentity.Exchange.RefreshBefore == 30*time.Second && p.UpstreamIdentity.Exchange.MaxCached == 10000},
		{"tracing", p.Tracing.Exporter == TracingNone},
		{"tls", p.TLS.ClientCAFile == "/etc/flowdrop/tls/clients-ca.pem" && p.TLS.KeyFile != ""},
		{"backend_errors (the safe default written out)", !p.BackendErrors.PassDebugInfo},
		{"credentials", len(p.Credentials) == 2 && p.Credentials[0].Env == "UPSTREAM_TOKEN" && p.Credentials[1].File == "/etc/flowdrop/creds/*" &&
			len(p.Credentials[1].Origins) == 2},
		{"mcp_upstreams bounds", p.MCPUpstreams.RelistInterval == 30*time.Second &&
			p.MCPUpstreams.Bounds == mcpimport.Bounds{ListBytes: 16 << 20, Tools: 10000, DescriptionBytes: 16 << 10, SchemaBytes: 256 << 10}},
		{"mcp.allowed_origins", slices.Equal(p.MCP.AllowedOrigins, []string{"https://app.example.com"})},
		{"mcp.discovery", slices.Equal(p.MCP.Discovery.Roles, []string{"large-catalog"}) && !p.MCP.Discovery.All && p.MCP.Discovery.Callers == nil},
		{"normalize.optional_nulls and a per-tool override", p.Normalize.OptionalNulls.Mode == policy.OptionalNullsKeep &&
			slices.Equal(p.Normalize.OptionalNulls.Tools, []policy.ToolOptionalNulls{{Match: "legacy_*", Mode: policy.OptionalNullsDrop}})},
	}
	if q, err := ParsePolicy([]byte("auth: {mode: off}\nidempotency: {ttl: 1h, max_result_bytes: 4096, max_entries: 10}\n"), "inline"); err != nil ||
		q.Idempotency != (IdempotencyConfig{TTL: time.Hour, MaxResultBytes: 4096, MaxEntries: 10}) {
		t.Errorf("idempotency section = %+v, %v; want it loaded as written", q.Idempotency, err)
	}
	if q, err := ParsePolicy([]byte("auth: {mode: off}\nbackend_errors: {pass_debug_info: true}\n"), "inline"); err != nil || !q.BackendErrors.PassDebugInfo {
		t.Errorf("backend_errors.pass_debug_info: true = %+v, %v; want it set", q.BackendErrors, err)
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s not loaded as written: %+v", c.reason, p)
		}
	}
	// The rules compile and the authorizer accepts the globs.
	if _, err := policy.NewRules(p.Rules); err != nil {
		t.Error(err)
	}
	if _, err := policy.NewAuthorizer(p.Authz); err != nil {
		t.Error(err)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		want              []string
	}{
		{name: "unknown-key", reason: "a typo must not silently drop a section", doc: "auth: {mode: on}\nrulez: []\n", want: []string{"rulez"}},
		{name: "user-consent-default", reason: "user-consent names an OAuth client, which only a rule can",
			doc: "auth: {mode: on}\nupstream_identity: {default: user-consent}\n", want: []string{"upstream_identity.default: user-consent"}},
		{name: "user-consent-unknown-client", reason: "a rule's oauth_client must be one user_consent configures",
			doc: "auth: {mode: on}\nupstream_identity: {tools: [{match: x, mode: user-consent, oauth_client: gh}]}\n", want: []string{"upstream_identity.tools[0].oauth_client", "user_consent section"}},
		{name: "user-consent-two-stores", reason: "tokens live in one store: bolt or Redis",
			doc:  "auth: {mode: on}\nupstream_identity: {user_consent: {redirect_url: \"https://g.example/oauth/upstream/callback\", key_files: [k], store: {bolt_file: f, redis: true}, clients: [{name: gh, issuer: \"https://a.example\", client_id: c, client_secret_file: s}]}}\n",
			want: []string{"upstream_identity.user_consent: store"}},
		{name: "unknown-nested-key", reason: "typos inside sections too", doc: "auth: {mode: on, api_key: []}\n", want: []string{"api_key"}},
		{name: "no-mode", reason: "authentication must be decided explicitly", doc: "limits: {max_depth: 3}\n", want: []string{"auth.mode is not set"}},
		{name: "bad-mode", reason: "only on/off", doc: "auth: {mode: maybe}\n", want: []string{`auth.mode "maybe"`}},
		{name: "bad-duration", reason: "durations are Go durations", doc: "auth: {mode: on}\nrate_limit: {idle_timeout: soon}\n", want: []string{"soon"}},
		{name: "otlp-without-endpoint", reason: "otlp needs a collector", doc: "auth: {mode: off}\ntracing: {exporter: otlp}\n", want: []string{"tracing.endpoint"}},
		{name: "mtls-without-client-ca", reason: "only certificates the gateway verified may identify callers", doc: "auth: {mode: on, mtls: {subject_from: cn}}\n", want: []string{"tls.client_ca_file"}},
		{name: "negative-limit", reason: "limits are sizes", doc: "auth: {mode: off}\nlimits: {max_depth: -1}\n", want: []string{"limits.max_depth"}},
		{name: "origin-wildcard", reason: "an allowed origin is exact: a wildcard would let any subdomain in",
			doc: "auth: {mode: off}\nmcp: {allowed_origins: [\"https://ok.example\", \"https://*.example\"]}\n", want: []string{"mcp.allowed_origins[1]", "wildcards"}},
		{name: "origin-null", reason: "null is the origin of any sandboxed page",
			doc: "auth: {mode: off}\nmcp: {allowed_origins: [\"null\"]}\n", want: []string{"mcp.allowed_origins[0]", "never allowed"}},
		{name: "origin-with-path", reason: "browsers send no path: an entry with one would never match",
			doc: "auth: {mode: off}\nmcp: {allowed_origins: [\"https://app.example.com/\"]}\n", want: []string{"mcp.allowed_origins[0]", "without a path"}},
		{name: "unknown-mcp-key", reason: "typos in the mcp section too",
			doc: "auth: {mode: off}\nmcp: {allowed_origin: []}\n", want: []string{"allowed_origin"}},
		{name: "tool-rate-without-burst", reason: "an override is a whole bucket: rate and burst",
			doc: "auth: {mode: off}\nrate_limit: {tools: [{match: run_command, rate: 1}]}\n", want: []string{"rate_limit.tools[0]", "run_command"}},
		{name: "rate-without-burst", reason: "the default bucket needs a burst too (was only found at start-up)",
			doc: "auth: {mode: off}\nrate_limit: {rate: 5}\n", want: []string{"rate_limit: burst"}},
		{name: "registry-rate-without-burst", reason: "the registry bucket is a whole bucket: rate and burst",
			doc: "auth: {mode: off}\nrate_limit: {registry: {rate: 5}}\n", want: []string{"rate_limit.registry"}},
		{name: "negative-idempotency-ttl", reason: "a TTL is a duration to keep outcomes, not a sign",
			doc: "auth: {mode: off}\nidempotency: {ttl: -1h}\n", want: []string{"idempotency.ttl"}},
		{name: "unknown-idempotency-key", reason: "a typo in the bound must not leave the default silently",
			doc: "auth: {mode: off}\nidempotency: {max_result_byte: 10}\n", want: []string{"max_result_byte"}},
		{name: "bad-rate-limit-fallback", reason: "only local or deny; a typo must not mean unlimited while Redis is away",
			doc: "auth: {mode: off}\nrate_limit: {fallback: allow}\n", want: []string{"rate_limit.fallback", "allow"}},
		{name: "bad-audit-on-failure", reason: "only the two audit failure modes; a typo must not mean fail-open",
			doc: "auth: {mode: off}\naudit: {path: a.jsonl, on_failure: ignore}\n", want: []string{"audit.on_failure", "ignore"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.doc), "p.yaml")
			if err == nil {
				t.Fatalf("accepted (%s)", tc.reason)
			}
			for _, w := range append(tc.want, "p.yaml") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q (%s)", err, w, tc.reason)
				}
			}
		})
	}
}

// The discovery keys of auth.jwt reach the JWT configuration.
func TestParsePolicyJWTDiscovery(t *testing.T) {
	doc := "auth: {mode: on, jwt: {issuer: https://i.test/, audience: a, jwks_file: j.json,\n" +
		"  resource: https://r.test/mcp, authorization_servers: [https://as.test/], scopes_supported: [tools]}}\n"
	p, err := ParsePolicy([]byte(doc), "inline")
	if err != nil {
		t.Fatal(err)
	}
	j := p.Auth.JWT
	if j == nil || j.Resource != "https://r.test/mcp" || !slices.Equal(j.AuthorizationServers, []string{"https://as.test/"}) ||
		!slices.Equal(j.ScopesSupported, []string{"tools"}) {
		t.Errorf("auth.jwt discovery keys not carried: %+v", j)
	}
}
