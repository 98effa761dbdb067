package server

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// What check-config finds about what a policy lets callers reach, beyond
// each object building: roles granted that open nothing, rules whose tool
// patterns match no tool, and a policy under which no tool can be called.

// checkRoles refuses a role granted to a caller (an API key's, a
// certificate subject's, the anonymous caller's) that no method of the
// method table is open to: a misspelt role ("invokr") grants nothing, and
// the caller would be refused everything. A JWT caller's roles are in its
// tokens, not in the file.
func checkRoles(cfg *PolicyConfig, policyPath string) error {
	methods := cfg.Authz.MethodRoles
	if methods == nil {
		methods = policy.DefaultMethodRoles()
	}
	// viewer opens no gRPC method but the admin console (server/console).
	known := map[string]bool{policy.RoleViewer: true}
	for _, roles := range methods {
		for _, r := range roles {
			known[r] = true
		}
	}
	var errs []error
	check := func(field string, roles []string) {
		for _, r := range roles {
			if !known[r] {
				errs = append(errs, fmt.Errorf("policy file %s: %s: role %q opens no method (the method table's roles: %s)",
					policyPath, field, r, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
			}
		}
	}
	a := cfg.Auth
	if a.Mode == policy.AuthOff {
		check("auth.anonymous_roles", a.AnonymousRoles)
	}
	for _, k := range a.APIKeys {
		check(fmt.Sprintf("auth.api_keys %q roles", k.Name), k.Roles)
	}
	if m := a.MTLS; m != nil {
		for _, subj := range slices.Sorted(maps.Keys(m.Roles)) {
			check(fmt.Sprintf("auth.mtls.roles %q", subj), m.Roles[subj])
		}
		check("auth.mtls.default_roles", m.DefaultRoles)
	}
	return errors.Join(errs...)
}

// checkRuleTools refuses a rule tool pattern matching no tool of the tools
// file: the rule guards nothing (a misspelt name, a renamed tool).
func checkRuleTools(cfg *PolicyConfig, tools []registry.Tool, policyPath, toolsPath string) error {
	var errs []error
	for _, r := range cfg.Rules {
		for _, p := range r.Tools {
			if !slices.ContainsFunc(tools, func(t registry.Tool) bool { ok, _ := path.Match(p, t.Name); return ok }) {
				errs = append(errs, fmt.Errorf("policy file %s: rule %q: tool pattern %q matches no tool in tools file %s", policyPath, r.Name, p, toolsPath))
			}
		}
	}
	return errors.Join(errs...)
}

// nothingCallable is a warning when no caller the policy names can call
// any tool: none holds a role InvokeTool is open to, or (with a tools
// file) none passes its allow and deny lists for any of the tools. ""
// when some can. The callers judged: every API key, every certificate
// subject the policy maps and one it does not (the default roles), the
// anonymous caller with authentication off, and a JWT caller holding any
// role (its roles are its token's) under the default tool access.
func nothingCallable(cfg *PolicyConfig, tools []registry.Tool) string {
	az, err := policy.NewAuthorizer(cfg.Authz)
	if err != nil {
		return "" // reported with the policy file's problems
	}
	callers := policyCallers(cfg)
	if len(tools) == 0 {
		for _, c := range callers {
			if az.AllowMethod(c, pipeline.InvokeMethod) == nil {
				return ""
			}
		}
		return "no caller the policy names holds a role InvokeTool is open to: no tool can be called"
	}
	for _, c := range callers {
		if az.AllowMethod(c, pipeline.InvokeMethod) != nil {
			continue
		}
		for _, t := range tools {
			if az.AllowTool(c, t.Name) == nil {
				return ""
			}
		}
	}
	return "under this policy no caller can call any tool of the tools file (roles and allow/deny lists)"
}

// policyCallers is every caller identity the policy's authentication can
// produce that it names, for judging what they may reach (nothingCallable).
func policyCallers(cfg *PolicyConfig) []policy.Caller {
	a := cfg.Auth
	if a.Mode == policy.AuthOff {
		roles := a.AnonymousRoles
		if roles == nil { // as policy.NewAuthenticator defaults it
			roles = []string{policy.RoleAdmin, policy.RoleInvoker}
		}
		return []policy.Caller{{Subject: "anonymous", Method: policy.MethodNone, Roles: roles}}
	}
	var out []policy.Caller
	for _, k := range a.APIKeys {
		out = append(out, policy.Caller{Subject: k.Name, Method: policy.MethodAPIKey, Roles: k.Roles})
	}
	if m := a.MTLS; m != nil {
		for subj, roles := range m.Roles {
			out = append(out, policy.Caller{Subject: subj, Method: policy.MethodMTLS, Roles: roles})
		}
		out = append(out, policy.Caller{Method: policy.MethodMTLS, Roles: m.DefaultRoles})
	}
	if a.JWT != nil {
		// A token may carry any role: every role of the method table.
		methods := cfg.Authz.MethodRoles
		if methods == nil {
			methods = policy.DefaultMethodRoles()
		}
		var roles []string
		for _, rs := range methods {
			roles = append(roles, rs...)
		}
		out = append(out, policy.Caller{Method: policy.MethodJWT, Roles: roles})
	}
	return out
}
