package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/server/identity"
)

// CheckConfig validates a policy file and, if toolsPath is not "", a tools
// file, offline, as Start and a reload would: the policy parsed (unknown
// keys refused) and every policy object built (API keys, JWT with its JWKS
// — a jwks_url is fetched, as at start —, authorization globs, CEL rules,
// rate limits, the TLS files, the audit file's directory, each stdio
// server's executable); every tool compiled and admitted (strict lint
// with strictLint) and, with both files, naming only stdio servers the
// policy declares. It returns every problem it found, joined (nil:
// valid); policyPath "" checks only tools.
func CheckConfig(ctx context.Context, policyPath, toolsPath string, strictLint bool, profiles ...lint.Profile) error {
	_, err := CheckConfigWarnings(ctx, policyPath, toolsPath, strictLint, profiles...)
	return err
}

// CheckConfigWarnings is CheckConfig that also checks what the policy lets
// callers reach (checkconfig_reach.go): a role granted that opens no
// method and, with both files, a rule tool pattern matching no tool are
// problems; a policy under which no tool can be called is a warning
// (check-config --strict makes it a problem).
func CheckConfigWarnings(ctx context.Context, policyPath, toolsPath string, strictLint bool, profiles ...lint.Profile) (warnings []string, err error) {
	var (
		errs  []error
		cfg   *PolicyConfig
		tools []registry.Tool
	)
	if policyPath != "" {
		var err error
		cfg, err = checkPolicyFile(ctx, policyPath)
		errs = append(errs, err)
	}
	if toolsPath != "" {
		var err error
		var maxEvaluations int
		if cfg != nil {
			maxEvaluations = cfg.Limits.MaxSchemaEvaluations
		}
		tools, err = checkToolsFile(ctx, toolsPath, strictLint, profiles, maxEvaluations)
		errs = append(errs, err)
	}
	if cfg != nil {
		errs = append(errs, checkRoles(cfg, policyPath))
		if w := nothingCallable(cfg, tools); w != "" {
			warnings = append(warnings, fmt.Sprintf("policy file %s: %s", policyPath, w))
		}
		if k := cfg.UpstreamIdentity.Consent; k != nil && k.VerifyCaller == nil {
			warnings = append(warnings, fmt.Sprintf("policy file %s: %s", policyPath, identity.NoVerifyCallerWarning))
		}
	}
	if cfg != nil && tools != nil {
		errs = append(errs, checkStdioNames(cfg, tools, policyPath, toolsPath), checkCredentials(cfg, tools, policyPath, toolsPath),
			checkRuleTools(cfg, tools, policyPath, toolsPath))
	}
	return warnings, errors.Join(errs...)
}

// checkCredentials refuses a tools file's tool naming a credential source
// the policy file does not declare for its origin (the seed would refuse
// it at start).
func checkCredentials(cfg *PolicyConfig, tools []registry.Tool, policyPath, toolsPath string) error {
	creds, err := policy.NewCredentialSources(cfg.Credentials)
	if err != nil {
		return nil // reported with the policy file's problems
	}
	var errs []error
	for _, t := range tools {
		if te := credentialToolError(creds, t); te != nil {
			errs = append(errs, fmt.Errorf("tools file %s: %w (policy file %s)", toolsPath, te, policyPath))
		}
	}
	return errors.Join(errs...)
}

// checkStdioNames refuses a tools file's tool naming a stdio server the
// policy file does not declare (its calls would be Unavailable).
func checkStdioNames(cfg *PolicyConfig, tools []registry.Tool, policyPath, toolsPath string) error {
	var errs []error
	for _, t := range tools {
		if t.Spec == nil || t.Spec.MCPTool == nil {
			continue
		}
		if name, ok := registry.StdioName(t.Spec.MCPTool.URL); ok {
			if _, declared := cfg.MCPUpstreams.Stdio[name]; !declared {
				errs = append(errs, fmt.Errorf("tools file %s: tool %q: spec.mcp_tool.url names stdio server %q, which policy file %s does not declare (mcp_upstreams.stdio)",
					toolsPath, t.Name, name, policyPath))
			}
		}
	}
	return errors.Join(errs...)
}

// checkPolicyFile is the policy file's problems, and the policy when it
// parses and validates (nil otherwise).
func checkPolicyFile(ctx context.Context, path string) (*PolicyConfig, error) {
	cfg, err := LoadPolicyFile(path) // parse and validate, every problem at once
	if err != nil {
		return nil, err
	}
	var errs []error
	bad := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("policy file %s: %w", path, err))
		}
	}
	// Each object on its own, so every problem is named, not the first.
	auth, err := policy.NewAuthenticator(ctx, cfg.Auth)
	if err == nil {
		auth.Close()
	}
	bad(err)
	_, err = policy.NewAuthorizer(cfg.Authz)
	bad(err)
	_, err = policy.NewRules(cfg.Rules)
	bad(err)
	_, err = policy.NewRegistryRateLimiter(cfg.RateLimit) // NewRateLimiter ran in validate
	bad(err)
	_, err = cfg.TLS.serverCredentials()
	bad(err)
	_, err = identity.New(cfg.UpstreamIdentity) // the signing keys and the STS secret are read
	bad(err)
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPUpstreams.Stdio)) {
		if err := runnable(cfg.MCPUpstreams.Stdio[name].Path); err != nil {
			errs = append(errs, fmt.Errorf("policy file %s: mcp_upstreams.stdio.%s.command: cannot run here: %w", path, name, err))
		}
	}
	if p := cfg.Audit.Path; p != "" && p != "-" {
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("policy file %s: audit.path %s: its directory does not exist", path, p))
		}
	}
	return &cfg, errors.Join(errs...)
}

// checkToolsFile is the tools file's problems, and its tools when it loads
// (nil otherwise).
// (maxEvaluations: the policy's limits.max_schema_evaluations, 0 the default).
func checkToolsFile(ctx context.Context, path string, strictLint bool, profiles []lint.Profile, maxEvaluations int) ([]registry.Tool, error) {
	compile := schemaBound(maxEvaluations)
	tools, err := registry.LoadFileWith(path, compile)
	if err != nil {
		return nil, err
	}
	if len(profiles) == 0 {
		profiles = registry.DefaultLintProfiles()
	}
	adm := registry.Admission{StrictLint: strictLint, LintProfiles: profiles, Compile: compile}
	var errs []error
	for _, t := range tools {
		if _, err := adm.Admit(ctx, t, nil); err != nil {
			errs = append(errs, fmt.Errorf("tools file %s: %w", path, err))
		}
	}
	return tools, errors.Join(errs...)
}
