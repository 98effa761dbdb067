package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

// CheckConfig validates a policy file and, if toolsPath is not "", a tools
// file, offline, as Start and a reload would: the policy parsed (unknown
// keys refused) and every policy object built (API keys, JWT with its JWKS
// — a jwks_url is fetched, as at start —, authorization globs, CEL rules,
// rate limits, the TLS files, the audit file's directory); every tool
// compiled and admitted (strict lint with strictLint). It returns every
// problem it found, joined (nil: valid); policyPath "" checks only tools.
func CheckConfig(ctx context.Context, policyPath, toolsPath string, strictLint bool) error {
	var errs []error
	if policyPath != "" {
		errs = append(errs, checkPolicyFile(ctx, policyPath))
	}
	if toolsPath != "" {
		errs = append(errs, checkToolsFile(ctx, toolsPath, strictLint))
	}
	return errors.Join(errs...)
}

func checkPolicyFile(ctx context.Context, path string) error {
	cfg, err := LoadPolicyFile(path) // parse and validate, every problem at once
	if err != nil {
		return err
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
	if p := cfg.Audit.Path; p != "" && p != "-" {
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("policy file %s: audit.path %s: its directory does not exist", path, p))
		}
	}
	return errors.Join(errs...)
}

func checkToolsFile(ctx context.Context, path string, strictLint bool) error {
	tools, err := registry.LoadFile(path)
	if err != nil {
		return err
	}
	adm := registry.Admission{StrictLint: strictLint, LintProfiles: registry.DefaultLintProfiles()}
	var errs []error
	for _, t := range tools {
		if _, err := adm.Admit(ctx, t, nil); err != nil {
			errs = append(errs, fmt.Errorf("tools file %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}
