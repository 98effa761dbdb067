package server

import (
	"cmp"
	"fmt"
	"time"

	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/server/observe"
)

// status is the admin status page's content: built per page view from the
// registry snapshot and the metrics (admin-only, never on the call path).
func (g *Gateway) status() observe.Status {
	s := observe.Status{Version: buildinfo.Read().String(), Store: g.storeDesc,
		StaleSeconds: g.reg.StaleFor().Seconds(), Generated: time.Now()}
	// The policy in force, as flowdrop_policy_info and the console name it.
	s.PolicyHash, s.PolicyReloaded = g.reload.InForce()
	if err := g.readiness(); err != nil {
		s.NotReady = err.Error()
	} else {
		s.Ready = true
	}
	counts := g.metrics.ToolCounts()
	entries := g.reg.Snapshot().List()
	for _, e := range entries {
		if e.Tool.Pending != nil {
			s.PendingChanges++
		}
	}
	if len(entries) > observe.MaxStatusTools {
		s.MoreTools = len(entries) - observe.MaxStatusTools
		entries = entries[:observe.MaxStatusTools]
	}
	profiles := g.lintProfiles
	for _, e := range entries {
		t := e.Tool
		c := counts[t.Name]
		kind, target := registry.OperatorView(&t)
		ts := observe.ToolStatus{Name: t.Name, Revision: t.Revision, Kind: kind, Backend: target,
			Repairs: c[0], Denials: c[1], Invalid: c[2]}
		for _, f := range lint.LintExported(t.Name, t.InputSchema, profiles...) {
			// Short: profile, rule and place (the full text is flowdropctl lint's).
			ts.Findings = append(ts.Findings, fmt.Sprintf("%s %s %s at %s", f.Profile, f.Severity, f.Rule, cmp.Or(f.Path, "/")))
		}
		ts.LastError, ts.LastErrorAt = g.metrics.LastError(t.Name)
		if t.Pending != nil {
			ts.Pending, _ = registry.ChangeKinds(t, *t.Pending)
			ts.PendingSince = t.Pending.DetectedAt
		}
		ts.Edited = t.Edited()
		s.Tools = append(s.Tools, ts)
	}
	return s
}
