package server

import (
	"context"
	"fmt"
	"io"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/replay"
)

// ReplayAudit replays the tool calls of the audit log audit against the
// candidate policy and tools files (server/replay): what check-config
// --replay reports. The files must be valid (CheckConfig them first); the
// error is theirs or the audit's reading, never a line's.
func ReplayAudit(ctx context.Context, policyPath, toolsPath string, audit io.Reader, o replay.Options) (*replay.Report, error) {
	cfg, err := LoadPolicyFile(policyPath)
	if err != nil {
		return nil, err
	}
	cand, err := ReplayCandidate(&cfg)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", policyPath, err)
	}
	defs, err := registry.LoadFileWith(toolsPath, schemaBound(cfg.Limits.MaxSchemaEvaluations))
	if err != nil {
		return nil, err
	}
	tools, err := replay.CompileTools(defs, schemaBound(cfg.Limits.MaxSchemaEvaluations))
	if err != nil {
		return nil, fmt.Errorf("tools file %s: %w", toolsPath, err)
	}
	cand.Tools = tools
	return replay.Run(ctx, audit, cand, o)
}

// ReplayCandidate builds the policy objects a replay judges calls by from
// cfg, as the gateway builds them (buildSwappable); the caller sets
// Candidate.Tools. Authentication is left out: the recorded callers are
// resolved by name (replay.CallersFromAuth), and no JWKS is fetched.
func ReplayCandidate(cfg *PolicyConfig) (replay.Candidate, error) {
	c := replay.Candidate{Limits: cfg.Limits, ForwardEntityBound: cfg.Normalize.OnEntityBound == EntityBoundForward,
		Callers: replay.CallersFromAuth(cfg.Auth)}
	var err error
	if c.Authz, err = policy.NewAuthorizer(cfg.Authz); err != nil {
		return c, err
	}
	if c.Rules, err = policy.NewRules(cfg.Rules); err != nil {
		return c, err
	}
	if c.OptionalNulls, err = policy.NewOptionalNulls(cfg.Normalize.OptionalNulls); err != nil {
		return c, err
	}
	return c, nil
}
