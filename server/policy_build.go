package server

import (
	"context"
	"os"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// buildPolicy builds the policy objects from cfg into a pipeline config.
// ctx bounds a JWKS fetch.
func (g *Gateway) buildPolicy(ctx context.Context, cfg *PolicyConfig) (pc pipeline.Config, err error) {
	pol, err := g.buildSwappable(ctx, cfg, nil, nil)
	if err != nil {
		return pc, err
	}
	g.auth = pol.Auth
	fail := func(err error) (pipeline.Config, error) { g.closePolicy(); return pc, err }
	pc.Auth, pc.Authz, pc.Rules, pc.RateLimit, pc.RegistryRate = pol.Auth, pol.Authz, pol.Rules, pol.RateLimit, pol.RegistryRate
	pc.Limits, pc.ForwardEntityBound, pc.OptionalNulls, pc.InFlight = pol.Limits, pol.ForwardEntityBound, pol.OptionalNulls, pol.InFlight
	opt := policy.AuditSinkOptions{RotateBytes: cfg.Audit.RotateBytes, KeepRotated: cfg.Audit.KeepRotated, KeepRotatedFor: cfg.Audit.KeepRotatedFor,
		OnDrop: g.metrics.CountAuditDropped,
		// The sink's error names the file: logs only, never a caller.
		OnError: func(err error, suppressed int64) {
			g.log.Error("audit log write failed; records are being lost", "error", err.Error(),
				"suppressed_since_last_report", suppressed, "on_failure", auditMode(cfg.Audit))
		},
		OnFail: g.auditHealthChanged,
		OnRecover: func(dropped int64) {
			g.log.Info("audit log writable again", "records_dropped", dropped)
			g.auditHealthChanged()
		}}
	switch cfg.Audit.Path {
	case "":
	case "-":
		g.audit = policy.NewWriterSink(os.Stdout, opt)
	default:
		if g.audit, err = policy.OpenFileSink(cfg.Audit.Path, opt); err != nil {
			return fail(err)
		}
	}
	if g.audit != nil {
		g.auditor = pipeline.NewAuditRecorder(g.audit, auditMode(cfg.Audit) == AuditFailClosed,
			func(msg string, err error) { g.log.Debug(msg, "error", err.Error()) })
	}
	return pc, nil
}

// auditMode is audit.on_failure with its default: fail-closed.
func auditMode(c AuditConfig) string {
	if c.OnFailure == "" {
		return AuditFailClosed
	}
	return c.OnFailure
}

// closePolicy releases the JWKS refresh and flushes the audit log.
func (g *Gateway) closePolicy() {
	release := func(*PolicyConfig) {
		if g.auth != nil {
			g.auth.Close()
		}
		if g.audit != nil {
			if err := g.audit.Close(); err != nil {
				g.log.Warn("closing the audit log", "error", err.Error())
			}
		}
	}
	if g.reload == nil { // start failed before the reloader: no reload can run
		release(nil)
		return
	}
	g.reload.CloseRetired()
	g.reload.Do(release) // a reload swaps g.auth under the same lock
}
