package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Fully-qualified gRPC service names the default method table refers to
// (strings only: this package does not import the generated stubs).
const (
	RegistryService = "flowdrop.gateway.v1.ToolRegistryService"
	GatewayService  = "flowdrop.gateway.v1.ToolGatewayService"
)

// DefaultMethodRoles is the role table used when AuthzConfig.MethodRoles is nil.
// A caller needs ANY of the listed roles.
//
// Roles are independent: admin does NOT imply invoker. An operator credential
// used to manage tools should not also be able to run them; a caller that
// needs both is given both. Invokers may read the registry (GetTool,
// ListTools, WatchTools) because agents discover tools that way; the server
// filters what they see with FilterTools.
func DefaultMethodRoles() map[string][]string {
	return map[string][]string{
		"/" + GatewayService + "/*":           {RoleInvoker},
		"/" + RegistryService + "/*":          {RoleAdmin},
		"/" + RegistryService + "/GetTool":    {RoleAdmin, RoleInvoker},
		"/" + RegistryService + "/ListTools":  {RoleAdmin, RoleInvoker},
		"/" + RegistryService + "/WatchTools": {RoleAdmin, RoleInvoker},
		// An agent hands its model the tools it may invoke (filtered alike).
		"/" + RegistryService + "/ExportTools": {RoleAdmin, RoleInvoker},
		// And searches what it may invoke (filtered alike).
		"/" + RegistryService + "/SearchTools": {RoleAdmin, RoleInvoker},
	}
}

// ToolAccess lists the tools a caller may invoke, as path.Match globs over
// tool names. A tool must match an Allow pattern and no Deny pattern: deny
// wins. An empty Allow list allows nothing (fail closed).
//
// Mode ModeShadow (caller entries only) watches the entry instead of
// enforcing it: the caller is enforced by Default, as if the entry were
// absent, and ShadowTool reports what the entry would have refused. The
// default entry cannot be shadow: nothing below it would be enforced.
type ToolAccess struct {
	Allow []string
	Deny  []string
	Mode  string
	// Resources are the resource URIs the caller may list and read over
	// MCP (resources.go); the allow and deny lists above also decide the
	// upstream prompts it sees, by their gateway names.
	Resources URIAccess
}

// AuthzConfig configures an Authorizer.
type AuthzConfig struct {
	// MethodRoles maps "/pkg.Service/Method" or "/pkg.Service/*" to the roles
	// that may call it (any of). An exact method entry beats the service
	// wildcard. nil means DefaultMethodRoles(). Methods not listed are denied;
	// the server exempts health and reflection before authorization.
	MethodRoles map[string][]string
	// Callers gives per-subject tool access; subjects not listed get Default.
	Callers map[string]ToolAccess
	Default ToolAccess
}

// Authorizer makes role and tool-list decisions.
type Authorizer struct {
	methods map[string][]string
	callers map[string]ToolAccess
	def     ToolAccess
	// shadow holds the caller entries in shadow mode (nil: none).
	shadow map[string]ToolAccess
}

// NewAuthorizer validates every glob and builds an Authorizer.
func NewAuthorizer(cfg AuthzConfig) (*Authorizer, error) {
	m := cfg.MethodRoles
	if m == nil {
		m = DefaultMethodRoles()
	}
	for k := range m {
		if !strings.HasPrefix(k, "/") || strings.Count(k, "/") != 2 {
			return nil, fmt.Errorf("authz: method %q is not of the form /package.Service/Method or /package.Service/*", k)
		}
	}
	check := func(who string, ta ToolAccess) error {
		for _, p := range slices.Concat(ta.Allow, ta.Deny) {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("authz: %s: tool pattern %q is not a valid glob: %w", who, p, err)
			}
		}
		return checkURIPatterns(who, ta.Resources)
	}
	if err := check("default", cfg.Default); err != nil {
		return nil, err
	}
	if cfg.Default.Mode == ModeShadow {
		return nil, fmt.Errorf("authz: default: mode %q is not possible: nothing below the default would be enforced (every tool would be open); shadow a caller entry instead", ModeShadow)
	}
	if err := checkMode("authz: default", cfg.Default.Mode); err != nil {
		return nil, err
	}
	az := &Authorizer{methods: m, callers: make(map[string]ToolAccess, len(cfg.Callers)), def: cfg.Default}
	for subj, ta := range cfg.Callers {
		if err := check("caller "+subj, ta); err != nil {
			return nil, err
		}
		if err := checkMode("authz: caller "+subj, ta.Mode); err != nil {
			return nil, err
		}
		if ta.Mode == ModeShadow {
			if az.shadow == nil {
				az.shadow = map[string]ToolAccess{}
			}
			az.shadow[subj] = ta
			continue
		}
		az.callers[subj] = ta
	}
	return az, nil
}

// AllowMethod checks that the caller holds a role for fullMethod
// ("/pkg.Service/Method").
func (a *Authorizer) AllowMethod(c Caller, fullMethod string) error {
	roles, ok := a.methods[fullMethod]
	if !ok {
		if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
			// Built in a stack buffer: m[string(b)] does not allocate, a
			// concatenated key would on every call to a wildcard method.
			var buf [128]byte
			key := append(append(buf[:0], fullMethod[:i]...), "/*"...)
			roles, ok = a.methods[string(key)]
		}
	}
	if !ok {
		return &Error{Code: PermissionDenied, Reason: ReasonMethodUnknown, Message: "method " + fullMethod + " is not open to any role"}
	}
	for _, r := range roles {
		if c.HasRole(r) {
			return nil
		}
	}
	return &Error{Code: PermissionDenied, Reason: ReasonRoleMissing,
		Message: fmt.Sprintf("caller %q lacks a role for %s (needs one of: %s)", c.Subject, fullMethod, strings.Join(roles, ", "))}
}

// AllowTool checks the caller's tool allow and deny lists (enforced).
func (a *Authorizer) AllowTool(c Caller, tool string) error {
	ta, ok := a.callers[c.Subject]
	if !ok {
		ta = a.def
	}
	if e := toolAccess(ta, c, tool); e != nil {
		return e
	}
	return nil // not a nil *Error in an error
}

// ToolAllowed is AllowTool's verdict without its error: listings ask it
// for every candidate tool (a caller who sees 1% of 100,000 tools has its
// pages scan far), and building a refusal's message for each cost several
// allocations a name.
func (a *Authorizer) ToolAllowed(c Caller, tool string) bool {
	ta, ok := a.callers[c.Subject]
	if !ok {
		ta = a.def
	}
	return !matchAny(ta.Deny, tool) && matchAny(ta.Allow, tool)
}

// HasShadow reports whether any caller entry is in shadow mode.
func (a *Authorizer) HasShadow() bool { return a != nil && a.shadow != nil }

// ShadowTool is the refusal the caller's shadow entry would make, or nil
// (no shadow entry, or it allows the tool). It never refuses a call.
func (a *Authorizer) ShadowTool(c Caller, tool string) *Error {
	ta, ok := a.shadow[c.Subject]
	if !ok {
		return nil
	}
	return toolAccess(ta, c, tool)
}

func toolAccess(ta ToolAccess, c Caller, tool string) *Error {
	if matchAny(ta.Deny, tool) {
		return &Error{Code: PermissionDenied, Reason: ReasonToolDenied, Tool: tool,
			Message: fmt.Sprintf("tool %q is denied for caller %q", tool, c.Subject)}
	}
	if !matchAny(ta.Allow, tool) {
		return &Error{Code: PermissionDenied, Reason: ReasonToolNotAllowed, Tool: tool,
			Message: fmt.Sprintf("tool %q is not in the allow list of caller %q", tool, c.Subject)}
	}
	return nil
}

// FilterTools returns the names the caller may invoke, in the given order
// (for ListTools and the MCP tool list). It allocates a new slice.
func (a *Authorizer) FilterTools(c Caller, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if a.AllowTool(c, n) == nil {
			out = append(out, n)
		}
	}
	return out
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if matchTool(p, name) { // toolglob.go
			return true
		}
	}
	return false
}
