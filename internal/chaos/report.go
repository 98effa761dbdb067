package chaos

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Report is what a soak found. The invariants — WrongResults,
// LostAuditLines, IdempotencyViolations and LimitExceeded zero, every
// recovery within its bound — are in Failures when broken.
type Report struct {
	Config    Config                 `json:"config"`
	Elapsed   float64                `json:"elapsed_seconds"`
	Faces     map[string]*FaceCounts `json:"faces"`
	Wrong     int                    `json:"wrong_results"`
	WrongSeen []string               `json:"wrong_examples,omitempty"`
	// LostAuditLines: calls answered OK whose line is not in the audit
	// file of the replica that answered (with decision allow).
	LostAuditLines int      `json:"lost_audit_lines"`
	LostSeen       []string `json:"lost_examples,omitempty"`
	AuditLines     int      `json:"audit_lines_read"`
	AuditUnread    int      `json:"audit_lines_unreadable"`
	// Idempotency: keys used, keys that never got an OK within their
	// retry window, keys run more than once (violations), and re-runs the
	// documented failover loss explains (a claim within the replication
	// lag of a killed primary).
	Keys                  int      `json:"idempotency_keys"`
	KeysUnanswered        int      `json:"idempotency_keys_unanswered"`
	UnansweredSeen        []string `json:"idempotency_unanswered_examples,omitempty"`
	AnsweredOnRetry       int      `json:"idempotency_answered_on_retry"`
	IdempotencyViolations int      `json:"idempotency_violations"`
	ViolationSeen         []string `json:"idempotency_violation_examples,omitempty"`
	RerunsAtFailover      int      `json:"idempotency_reruns_at_failover"`
	// Limit: echo_limited's admitted calls against the bound the bucket
	// allows across the run's failovers (rate_limit.fallback deny).
	LimitAdmitted int            `json:"limit_admitted"`
	LimitBound    int            `json:"limit_bound"`
	Faults        []FaultReport  `json:"faults"`
	Bounds        map[string]int `json:"recovery_bounds_seconds"`
	Failures      []string       `json:"failures"`
}

// FaceCounts are one face's attempts.
type FaceCounts struct {
	Attempted int            `json:"attempted"`
	Succeeded int            `json:"succeeded"`
	Failed    int            `json:"failed"`
	ByCode    map[string]int `json:"by_code"`
}

// FaultReport is one fault: when (seconds into the run), the recovery
// times measured for it, and how calls begun during it ended.
type FaultReport struct {
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	Down   float64 `json:"down_at"`
	Up     float64 `json:"restored_at"`
	// Recovery: what was measured (see Measure) per replica or for the
	// backend, in seconds; -1 when it never happened in the run.
	Measure  string             `json:"measure"`
	Recovery map[string]float64 `json:"recovery_seconds"`
	// During counts the outcomes of calls begun while the fault lasted,
	// by face and code: how the fleet failed (closed) meanwhile.
	During map[string]map[string]int `json:"during"`
}

// RecoveryBounds are the CI variant's bounds per fault kind, in seconds:
// generous for a loaded 2-core machine, far below "never". backend: a
// restored address's first answer (its connection's back-off, ejection
// base); replica: process start, registry load from etcd, first answer;
// etcd: the 1 s reconnect cap and the 1 s staleness probe; redis-primary:
// Sentinel's 1 s down-after, its election, the clients' redial (from the
// kill); redis-replica: no effect expected.
var RecoveryBounds = map[string]int{FaultBackend: 30, FaultReplica: 45, FaultEtcd: 10, FaultRedisPrimary: 20, FaultRedisReplica: 10}

const examples = 5

func analyse(cfg Config, f *Fleet, c *Callers, faults []*Fault, start, end time.Time, audits []*auditIndex) *Report {
	out := c.outcomes()
	rep := &Report{Config: cfg, Elapsed: end.Sub(start).Seconds(), Faces: map[string]*FaceCounts{}, Bounds: RecoveryBounds}
	for _, a := range audits {
		rep.AuditLines += a.lines
		rep.AuditUnread += a.unreadable
	}
	okKeys := map[string]bool{}
	for _, o := range out {
		fc := rep.Faces[o.Face]
		if fc == nil {
			fc = &FaceCounts{ByCode: map[string]int{}}
			rep.Faces[o.Face] = fc
		}
		fc.Attempted++
		fc.ByCode[o.Code]++
		if !o.OK {
			fc.Failed++
			continue
		}
		fc.Succeeded++
		if o.Wrong != "" {
			rep.Wrong++
			if len(rep.WrongSeen) < examples {
				rep.WrongSeen = append(rep.WrongSeen, o.Wrong)
			}
		}
		if d, ok := audits[o.Replica].decisions[o.CallID]; !ok || d != "allow" {
			rep.LostAuditLines++
			if len(rep.LostSeen) < examples {
				rep.LostSeen = append(rep.LostSeen, fmt.Sprintf("%s on replica-%d (found: %q)", o.CallID, o.Replica, d))
			}
		}
		if o.Key != "" {
			okKeys[o.Key] = true
		}
		if o.Tool == toolLimited {
			rep.LimitAdmitted++
		}
	}

	var kills []time.Time
	for _, fl := range faults {
		if fl.Kind == FaultRedisPrimary {
			kills = append(kills, fl.Down)
		}
	}
	c.mu.Lock()
	keys := make(map[string]string, len(c.keys))
	for k, tool := range c.keys {
		keys[k] = tool
	}
	c.mu.Unlock()
	rep.Keys = len(keys)
	attempts := map[string][]string{}
	for _, o := range out {
		if o.Key != "" && !okKeys[o.Key] {
			attempts[o.Key] = append(attempts[o.Key], fmt.Sprintf("+%.1fs replica-%d %s", o.Began.Sub(start).Seconds(), o.Replica, o.Code))
		}
	}
	for k, tool := range keys {
		rs := f.BackendRuns
		if tool == toolMCP {
			rs = f.UpstreamRuns
		}
		n, first := rs.get(k)
		if !okKeys[k] {
			rep.KeysUnanswered++
			if len(rep.UnansweredSeen) < examples {
				rep.UnansweredSeen = append(rep.UnansweredSeen, fmt.Sprintf("%s (%s, ran %d times): %s", k, tool, n, strings.Join(attempts[k], ", ")))
			}
		}
		if n <= 1 {
			continue
		}
		if nearAny(first, kills, time.Second) {
			rep.RerunsAtFailover++
			continue
		}
		rep.IdempotencyViolations++
		if len(rep.ViolationSeen) < examples {
			rep.ViolationSeen = append(rep.ViolationSeen, fmt.Sprintf("%s (%s) ran %d times", k, tool, n))
		}
	}
	for _, o := range out {
		if o.OK && o.Key != "" && !strings.HasSuffix(o.CallID, "-a0") {
			rep.AnsweredOnRetry++
		}
	}
	rep.LimitBound = cfg.Limit.Burst*(1+len(kills)) + int(math.Ceil(cfg.Limit.Rate*rep.Elapsed))
	if rep.LimitAdmitted > rep.LimitBound {
		rep.Failures = append(rep.Failures, fmt.Sprintf("the fleet admitted %d calls of %s; the bucket allows %d (burst × (1 + %d failovers) + rate × the run)",
			rep.LimitAdmitted, toolLimited, rep.LimitBound, len(kills)))
	}
	for _, fl := range faults {
		fr := faultReport(fl, f, out, start)
		rep.Faults = append(rep.Faults, fr)
		bound := float64(RecoveryBounds[fl.Kind])
		names := make([]string, 0, len(fr.Recovery))
		for n := range fr.Recovery {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if v := fr.Recovery[n]; v < 0 || v > bound {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s at +%.1fs: %s for %s took %s (bound %.0fs)",
					fl.Kind, fl.Target, fr.Down, fr.Measure, n, secs(v), bound))
			}
		}
	}
	if rep.Wrong > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d wrong results", rep.Wrong))
	}
	if rep.LostAuditLines > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d accepted calls without their audit line", rep.LostAuditLines))
	}
	if rep.IdempotencyViolations > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d idempotency keys ran more than once", rep.IdempotencyViolations))
	}
	for _, face := range []string{FaceGRPC, FaceMCP} {
		fc := rep.Faces[face]
		if fc == nil {
			continue
		}
		for code, n := range fc.ByCode {
			if code != "OK" && !documented(code) {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%d %s calls ended %s: not a refusal RELIABILITY.md documents for these faults", n, face, code))
			}
		}
	}
	for face, fc := range rep.Faces {
		if fc.Succeeded == 0 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("no call succeeded on %s", face))
		}
	}
	return rep
}

func nearAny(t time.Time, ts []time.Time, d time.Duration) bool {
	for _, x := range ts {
		if t.Sub(x) < d && x.Sub(t) < d {
			return true
		}
	}
	return false
}

func secs(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2fs", v)
}

// faultReport measures one fault's recovery from the outcomes:
//   - backend: from the restore to the first call the restored address
//     answered;
//   - replica: from the restart's beginning to its first answered call;
//   - etcd: from the restart to each replica serving a tool written then;
//   - redis-primary: from the kill to each replica's first echo_limited
//     call admitted (with fallback deny only Redis admits it);
//   - redis-replica: from the restore to each replica's first keyed call
//     answered.
func faultReport(fl *Fault, f *Fleet, out []Outcome, start time.Time) FaultReport {
	fr := FaultReport{Kind: fl.Kind, Target: fl.Target, Down: fl.Down.Sub(start).Seconds(), Up: fl.Up.Sub(start).Seconds(),
		Recovery: map[string]float64{}, During: map[string]map[string]int{}}
	for _, o := range out {
		if o.Began.Before(fl.Down) || o.Began.After(fl.Up) {
			continue
		}
		if fr.During[o.Face] == nil {
			fr.During[o.Face] = map[string]int{}
		}
		fr.During[o.Face][o.Tool+" "+o.Code]++
	}
	first := func(from time.Time, match func(Outcome) bool) float64 {
		best := time.Time{}
		for _, o := range out {
			if o.OK && !o.Began.Before(from) && match(o) && (best.IsZero() || o.Began.Before(best)) {
				best = o.Began
			}
		}
		if best.IsZero() {
			return -1
		}
		return best.Sub(from).Seconds()
	}
	switch fl.Kind {
	case FaultBackend:
		fr.Measure = "restore → first call it answered"
		fr.Recovery[fl.Target] = first(fl.Up, func(o Outcome) bool { return o.By == fl.Target })
	case FaultReplica:
		fr.Measure = "restart → first call it answered"
		for _, r := range f.Replicas {
			if fmt.Sprintf("replica-%d", r.Index) == fl.Target {
				fr.Recovery[fl.Target] = first(fl.Up, func(o Outcome) bool { return o.Replica == r.Index })
			}
		}
	case FaultEtcd:
		fr.Measure = "restart → a tool written to etcd served"
		for i, d := range fl.probe {
			v := -1.0
			if d >= 0 {
				v = d.Seconds()
			}
			fr.Recovery[fmt.Sprintf("replica-%d", i)] = v
		}
	case FaultRedisPrimary:
		fr.Measure = "kill → first " + toolLimited + " call Redis admitted"
		for _, r := range f.Replicas {
			fr.Recovery[fmt.Sprintf("replica-%d", r.Index)] = first(fl.Down, func(o Outcome) bool {
				return o.Replica == r.Index && o.Tool == toolLimited
			})
		}
	case FaultRedisReplica:
		fr.Measure = "restore → first keyed call answered"
		for _, r := range f.Replicas {
			fr.Recovery[fmt.Sprintf("replica-%d", r.Index)] = first(fl.Up, func(o Outcome) bool {
				return o.Replica == r.Index && o.Key != ""
			})
		}
	}
	return fr
}

// Summary is the report for people.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos soak: %.0fs, %d replicas, %d workers\n", r.Elapsed, r.Config.Replicas, r.Config.Workers)
	for _, face := range []string{FaceGRPC, FaceMCP} {
		fc := r.Faces[face]
		if fc == nil {
			continue
		}
		fmt.Fprintf(&b, "  %-4s attempted %d, succeeded %d, failed %d\n", face, fc.Attempted, fc.Succeeded, fc.Failed)
		codes := make([]string, 0, len(fc.ByCode))
		for c := range fc.ByCode {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		for _, c := range codes {
			fmt.Fprintf(&b, "       %7d %s\n", fc.ByCode[c], c)
		}
	}
	fmt.Fprintf(&b, "  wrong results %d, lost audit lines %d (%d lines read, %d unreadable)\n", r.Wrong, r.LostAuditLines, r.AuditLines, r.AuditUnread)
	fmt.Fprintf(&b, "  idempotency: %d keys, %d unanswered in their retry window, %d answered on a retry, %d violations, %d re-runs at a failover\n",
		r.Keys, r.KeysUnanswered, r.AnsweredOnRetry, r.IdempotencyViolations, r.RerunsAtFailover)
	for _, u := range r.UnansweredSeen {
		fmt.Fprintf(&b, "    unanswered %s\n", u)
	}
	fmt.Fprintf(&b, "  fleet limit on %s: %d admitted, bound %d\n", toolLimited, r.LimitAdmitted, r.LimitBound)
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "  fault %-13s %-26s down +%.1fs, restored +%.1fs; %s:", f.Kind, f.Target, f.Down, f.Up, f.Measure)
		names := make([]string, 0, len(f.Recovery))
		for n := range f.Recovery {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, " %s %s", n, secs(f.Recovery[n]))
		}
		b.WriteString("\n")
	}
	if len(r.Failures) == 0 {
		b.WriteString("  PASS\n")
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "  FAIL %s\n", f)
	}
	return b.String()
}

// documentedRefusals are how a call may fail under the soak's faults, as
// RELIABILITY.md says the fleet fails closed: the limit (or, Redis away,
// its fallback deny), the idempotency store away or the key's claim still
// held by a killed replica, a backend address gone mid-call. Anything else
// (Internal, a wrong argument, a tool error) is a finding.
var documentedRefusals = map[string]bool{
	"rate-limited": true, "rate-limit-unavailable": true,
	"idempotency-unavailable": true, "idempotency-in-progress": true,
	"backend-unavailable": true,
}

// documented says whether a failed call's code is a documented refusal or
// a transport failure (the replica it was sent to was down).
func documented(code string) bool {
	if code == "transport" || strings.HasSuffix(code, "/transport") {
		return true
	}
	_, reason, ok := strings.Cut(code, "/")
	if !ok {
		return false
	}
	// gRPC's ErrorInfo has the reason as RATE_LIMITED; MCP's _meta as
	// rate-limited.
	reason = strings.ReplaceAll(strings.ToLower(reason), "_", "-")
	return documentedRefusals[reason]
}
