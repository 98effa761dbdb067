package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/policyreload"
)

// policyHash is the hex SHA-256 of the policy's file, or, for a policy
// built in Go, of its printed form (pointers followed, the JWT HTTP
// client left out; fmt prints maps sorted, so equal policies hash equal).
func policyHash(cfg *PolicyConfig) string {
	if cfg.SHA256 != "" {
		return cfg.SHA256
	}
	c := *cfg
	var jwt policy.JWTConfig
	var mtls policy.MTLSConfig
	if c.Auth.JWT != nil {
		jwt = *c.Auth.JWT
		jwt.HTTPClient = nil
	}
	if c.Auth.MTLS != nil {
		mtls = *c.Auth.MTLS
	}
	c.Auth.JWT, c.Auth.MTLS = nil, nil
	var signing identity.SigningConfig
	var exchange identity.ExchangeConfig
	if s := c.UpstreamIdentity.Signing; s != nil {
		signing = *s
	}
	if x := c.UpstreamIdentity.Exchange; x != nil {
		exchange = *x
		exchange.HTTPClient, exchange.Now = nil, nil
	}
	var consent identity.ConsentConfig
	if k := c.UpstreamIdentity.Consent; k != nil {
		consent = *k
		consent.Store, consent.HTTPClient, consent.Now = nil, nil, nil
	}
	c.UpstreamIdentity.Signing, c.UpstreamIdentity.Exchange, c.UpstreamIdentity.Consent = nil, nil, nil
	sum := sha256.Sum256(fmt.Appendf(nil, "%+v|%t %+v|%t %+v|%+v %+v|%t %+v", c, cfg.Auth.JWT != nil, jwt, cfg.Auth.MTLS != nil, mtls, signing, exchange,
		cfg.UpstreamIdentity.Consent != nil, consent))
	return hex.EncodeToString(sum[:])
}

// PolicySHA256 is the hash of the policy in force (see flowdrop_policy_info).
func (g *Gateway) PolicySHA256() string { return g.reload.Hash() }

// ReloadPolicyFile reads the policy file and reloads it (ReloadPolicy);
// adjust, if not nil, changes the parsed policy first (the binary applies
// its flags' overrides). A file that does not parse is refused like any
// other bad policy: logged, counted, the policy in force unchanged.
func (g *Gateway) ReloadPolicyFile(path string, adjust func(*PolicyConfig)) error {
	cfg, err := LoadPolicyFile(path)
	if err != nil {
		return g.reload.Refuse(err)
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return g.ReloadPolicy(cfg)
}

// ReloadPolicy makes cfg the policy of every call from now on. It is
// validated and every policy object built aside (authenticator with its
// JWKS, authorizer, CEL rules, limits, rate limiters), then swapped in
// atomically: calls in flight finish under the policy they began with. A
// policy that fails any of that, or that changes what a reload cannot
// (unswappable), is refused with an error naming every problem, logged
// at ERROR and counted; the policy in force keeps serving
// (server/policyreload).
//
// Rate-limit buckets are kept when rate_limit is unchanged and start full
// again when it changed; the in-flight counters are kept when
// limits.max_in_flight_per_tool is unchanged.
func (g *Gateway) ReloadPolicy(cfg PolicyConfig) error {
	var prev string
	inputChanged := false
	err := g.reload.Reload(cfg, func(cur, next *PolicyConfig) (applied policyreload.Applied, err error) {
		prev = policyHash(cur)
		inputChanged = !reflect.DeepEqual(cur.MCPUpstreams.Input.Forbid, next.MCPUpstreams.Input.Forbid)
		if err := next.validate(); err != nil {
			return applied, err
		}
		if err := unswappable(cur, next); err != nil {
			return applied, err
		}
		ui, err := g.withConsentStore(next.UpstreamIdentity)
		if err != nil {
			return applied, fmt.Errorf("config: policy: %w", err)
		}
		idr, err := identity.New(ui)
		if err != nil {
			return applied, fmt.Errorf("config: policy: %w", err)
		}
		old := g.pipe.Policy()
		// The JWKS fetch is bounded by jwt.fetch_timeout; the refresh lives
		// until the Authenticator is closed.
		pol, err := g.buildSwappable(context.Background(), next, old, cur)
		if err != nil {
			return applied, fmt.Errorf("config: policy: %w", err)
		}
		g.pipe.SetPolicy(pol)
		// Validated above: the sources build. From now on registrations and
		// calls are held to them (a call already past its check finishes).
		creds, _ := policy.NewCredentialSources(next.Credentials)
		g.creds.Store(creds)
		// Calls from now on are sent under the new identity rules and keys
		// (the exchanged tokens' cache starts empty).
		g.identity.Store(idr)
		if g.mcp != nil {
			// Checked by validate above, so this cannot fail.
			_ = g.mcp.SetAllowedOrigins(next.MCP.AllowedOrigins)
			g.mcp.SetDiscovery(next.MCP.Discovery)
		}
		// A call that took the old policy just before may still be
		// authenticating with it: closed after the reloader's grace.
		if prev := g.auth; prev != nil && prev != pol.Auth {
			applied.Retire = prev.Close
		}
		g.auth = pol.Auth
		applied.LogAttrs = []any{"auth_off", pol.Auth.Off()}
		return applied, nil
	})
	// Upstream sessions declare what input they can relay at initialize:
	// those declaring what the policy now forbids, or not what it now
	// allows, are made again (backend's InputPolicyChanged).
	if err == nil && inputChanged && g.kinds != nil {
		g.kinds.MCPUpstream.InputPolicyChanged()
	}
	// The console's sessions made under the policy that left force end,
	// on every replica sharing the session store (server/console).
	if err == nil && g.console != nil && prev != g.PolicySHA256() {
		g.console.PolicyLeft(context.Background(), prev)
	}
	return err
}

// unswappable names what differs between the policy in force and next
// that a reload cannot change: what was set up once at start (listeners,
// the audit log, the tracer, the backend connections). Each is refused,
// never ignored: a reload that silently kept the old audit path would
// leave the operator believing the new one is in force.
func unswappable(cur, next *PolicyConfig) error {
	var errs []error
	bad := func(field, why string) {
		errs = append(errs, fmt.Errorf("policy reload: %s cannot change without a restart (%s)", field, why))
	}
	if !reflect.DeepEqual(cur.Audit, next.Audit) {
		bad("audit (path, rotate_bytes, keep_rotated, keep_rotated_for, on_failure)", "the audit log is opened once, at start")
	}
	if cur.Admin.ListenAddr != next.Admin.ListenAddr {
		bad("admin.listen_addr", "listeners are not reopened")
	}
	if !reflect.DeepEqual(cur.TLS, next.TLS) {
		bad("tls (cert_file, key_file, client_ca_file)", "the gRPC listener's TLS is set up at start")
	}
	if !reflect.DeepEqual(cur.Tracing, next.Tracing) {
		bad("tracing", "the exporter is set up at start")
	}
	if cur.BackendErrors != next.BackendErrors {
		bad("backend_errors.pass_debug_info", "the backend connections are set up at start")
	}
	if !reflect.DeepEqual(cur.BackendTLS, next.BackendTLS) {
		bad("backend_tls", "the backend connections are set up at start")
	}
	if cur.MCPUpstreams.RelistInterval != next.MCPUpstreams.RelistInterval {
		bad("mcp_upstreams.relist_interval", "the upstream follower is set up at start")
	}
	if cur.MCPUpstreams.Bounds != next.MCPUpstreams.Bounds {
		bad("mcp_upstreams (max_list_bytes, max_tools, max_description_bytes, max_schema_bytes)", "the upstream follower is set up at start")
	}
	if !reflect.DeepEqual(cur.MCPUpstreams.Stdio, next.MCPUpstreams.Stdio) {
		bad("mcp_upstreams.stdio", "the stdio servers are set up at start")
	}
	if cur.Limits.MaxSchemaEvaluations != next.Limits.MaxSchemaEvaluations {
		bad("limits.max_schema_evaluations", "the registry compiles every tool with it, at start")
	}
	if cur.Idempotency != next.Idempotency {
		bad("idempotency", "the idempotency store is set up at start")
	}
	return errors.Join(errs...)
}

// buildSwappable builds the policy objects a reload swaps, from cfg. With
// prev (the snapshot in force, built from prevCfg) it keeps the rate
// limiters when rate_limit is unchanged (their buckets carry over) and the
// in-flight counters when the limit is unchanged. With Redis configured the
// limiters decide there (redis.go). ctx bounds a JWKS fetch.
func (g *Gateway) buildSwappable(ctx context.Context, cfg *PolicyConfig, prev *pipeline.Policy, prevCfg *PolicyConfig) (pol pipeline.Policy, err error) {
	if pol.Auth, err = policy.NewAuthenticator(ctx, cfg.Auth); err != nil {
		return pol, err
	}
	defer func() {
		if err != nil {
			pol.Auth.Close()
		}
	}()
	if pol.Authz, err = policy.NewAuthorizer(cfg.Authz); err != nil {
		return pol, err
	}
	if pol.Rules, err = policy.NewRules(cfg.Rules); err != nil {
		return pol, err
	}
	if prev != nil && reflect.DeepEqual(prevCfg.RateLimit, cfg.RateLimit) {
		pol.RateLimit, pol.RegistryRate = prev.RateLimit, prev.RegistryRate
	} else {
		if pol.RateLimit, err = policy.NewRateLimiter(cfg.RateLimit, g.sharedLimits(redisToolBuckets, "tool", cfg.RateLimit.Fallback)...); err != nil {
			return pol, err
		}
		// Registry calls get buckets of their own: paging ListTools must
		// not spend (or be refused by) the invocation buckets.
		if pol.RegistryRate, err = policy.NewRegistryRateLimiter(cfg.RateLimit, g.sharedLimits(redisMethodBuckets, "registry", cfg.RateLimit.Fallback)...); err != nil {
			return pol, err
		}
	}
	if prev != nil && prevCfg.Limits.MaxInFlightPerTool == cfg.Limits.MaxInFlightPerTool {
		pol.InFlight = prev.InFlight
	} else {
		pol.InFlight = policy.NewInFlight(cfg.Limits.MaxInFlightPerTool)
	}
	pol.Limits = cfg.Limits
	pol.ForwardEntityBound = cfg.Normalize.OnEntityBound == EntityBoundForward
	if pol.OptionalNulls, err = policy.NewOptionalNulls(cfg.Normalize.OptionalNulls); err != nil {
		return pol, err
	}
	return pol, nil
}

// readyAbout is /readyz's extra line: the policy in force.
func (g *Gateway) readyAbout() string { return "policy_sha256 " + g.PolicySHA256() + "\n" }
