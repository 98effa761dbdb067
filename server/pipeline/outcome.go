package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

// Outcome is how one call ended, as every Recorder sees it.
type Outcome struct {
	// Err is nil for a successful call.
	Err *Error
	// Decision is policy.DecisionAllow, DecisionDeny or DecisionError;
	// Reason the policy reason, "validation-failed", or the code's name
	// for an error.
	Decision, Reason string
	// Label is the tool name for a registered tool, "_unknown" otherwise
	// (a model can send any name; metrics need bounded labels).
	Label       string
	Validation  string // "ok" | "failed" | "" (not reached)
	BackendCode string // the backend's code name, if it was called
	Latency     time.Duration
	// BackendLatency is the backend call's part of Latency (0 if not
	// called): Latency minus it is the time the gateway added.
	BackendLatency time.Duration
	// OutputInvalid: the result failed the tool's output schema.
	OutputInvalid bool
}

// Recorder records outcomes: the audit log, metrics. RecordCall runs once
// per call; RecordBackend once per backend call.
type Recorder interface {
	RecordCall(ctx context.Context, c *Call, o Outcome)
	RecordBackend(tool, code string, d time.Duration)
}

// AuditRecorder writes one audit line per call to a policy.AuditSink, with
// the arguments as sent and as repaired, redacted by the tool's schema.
//
// Fail-closed (audit.on_failure: fail-closed) means no call completes with
// its result while its audit line is missing:
//   - while the sink is failing (its last write failed), every call is
//     refused before any policy stage runs (the "audit" stage: Unavailable,
//     "audit log unavailable"), so no backend runs unaudited;
//   - a call that reached its backend waits for its own line to be written;
//     if that fails (or the call's context ends first) its result is
//     withheld: the caller gets Unavailable saying the tool may have run
//     (without RetryInfo: a blind retry would run it again).
//
// What it does not guarantee: the backend of a call whose line then failed
// HAS run (its effects happened; the line is missing and counted as
// dropped, and the sink's audit-gap line says how many are missing);
// "written" means write(2) returned, not fsync (a crash can lose the last
// lines); a refusal (nothing ran) is answered as it is even if its line
// was not written; a disk that hangs instead of failing holds calls until
// their deadline.
//
// Fail-open: lines are queued and never waited for; a failure is logged,
// counted and the call proceeds.
type AuditRecorder struct {
	sink       *policy.AuditSink
	failClosed bool
	log        func(msg string, err error)

	// redactors caches one Redactor per registry entry (a tool revision),
	// over the compiled schema's Sensitivity (the one notion of sensitive,
	// which validation messages follow too).
	redactors sync.Map // *registry.Entry -> *policy.Redactor
}

// NewAuditRecorder writes to sink; failClosed makes the audit a condition
// of every call (see AuditRecorder); logf hears about records not written.
func NewAuditRecorder(sink *policy.AuditSink, failClosed bool, logf func(msg string, err error)) *AuditRecorder {
	return &AuditRecorder{sink: sink, failClosed: failClosed, log: logf}
}

// Writable reports whether calls may start: always under fail-open; under
// fail-closed, while the sink's last write succeeded.
func (a *AuditRecorder) Writable() bool { return a == nil || !a.failClosed || a.sink.Healthy() }

// RecordBackend is a no-op: the backend's code is in the call's line.
func (a *AuditRecorder) RecordBackend(string, string, time.Duration) {}

// RecordCall writes the call's audit line (it never waits).
func (a *AuditRecorder) RecordCall(ctx context.Context, c *Call, o Outcome) {
	a.record(ctx, c, o, false)
}

// record writes the call's audit line; with wait it waits until the line
// is written and returns the sink's error.
func (a *AuditRecorder) record(ctx context.Context, c *Call, o Outcome, wait bool) error {
	rec := policy.AuditRecord{
		Time:        c.start,
		Client:      c.AuditClient,
		Tool:        c.Tool,
		Target:      c.AliasTarget(),
		CallID:      c.CallID,
		Decision:    o.Decision,
		Reason:      o.Reason,
		Repairs:     policy.RepairsFromReport(c.Report),
		Validation:  o.Validation,
		BackendCode: o.BackendCode,
		LatencyMS:   float64(o.Latency.Microseconds()) / 1000,
		// The key is bounded with the other caller-supplied strings.
		IdempotencyKey: c.IdempotencyKey,
		Replayed:       c.replayed,
		// The identity the backend was sent: its mode and subject only.
		IdentityMode:    c.identityMode,
		IdentitySubject: c.identitySubject,
	}
	if e := o.Err; e != nil {
		rec.Rule = e.Rule
	}
	if e := o.Err; e != nil && e.Kind == KindValidation {
		for _, v := range e.Violations {
			rec.Violations = append(rec.Violations, v.Pointer+": "+v.Message)
		}
	}
	if r := c.Input; r != nil {
		// That a round happened and what kinds it asked, never what.
		rec.InputRound, rec.InputAnswered = r.Round, r.Answered
		if r.Asked {
			rec.InputAsked = r.Kinds
		}
	}
	rec.InputRelayed = c.InputRelayed
	if c.HasCaller {
		rec.CallerSubject, rec.CallerMethod, rec.CallerRoles = c.Caller.Subject, c.Caller.Method, c.Caller.Roles
	}
	for _, d := range c.shadow {
		rec.ShadowDenials = append(rec.ShadowDenials, policy.ShadowDenial{Reason: d.Reason, Rule: d.Rule, Message: d.Message})
	}
	fromWire := false
	if sent, repaired, ok := c.args.forAuditWire(); ok && c.Entry != nil {
		// Never decoded (the wire checks proved them; rules read only
		// their members): encoded from the bytes, as sent and, when
		// repaired on the wire, as forwarded. Bytes the wire encoder does
		// not take (deeper than it follows) are decoded below.
		fromWire = rec.SetArgsWire(a.redactor(c.Entry), sent, repaired) == nil
	}
	if !fromWire && c.Entry != nil {
		sent, repaired := c.args.forAudit(c.Tool, c.pol)
		if err := rec.SetArgs(a.redactor(c.Entry), sent, repaired); err != nil {
			rec.ArgsSent, rec.ArgsRepaired = nil, nil
		}
	} // else: no schema to say what is sensitive: log no values at all.
	var err error
	if wait {
		err = a.sink.WriteWait(ctx, rec)
	} else {
		err = a.sink.Write(rec)
	}
	rec.ReleaseArgs() // the line holds a copy: the arguments' buffer is reused
	if err != nil && a.log != nil {
		a.log("audit record not written", err)
	}
	return err
}

// finish records the call's line; under fail-closed, a call that reached
// its backend waits for it and gets an error back if it was not written.
func (a *AuditRecorder) finish(ctx context.Context, c *Call, o Outcome) *Error {
	if !a.failClosed || c.backend == "" {
		a.record(ctx, c, o, false)
		return nil
	}
	if a.record(ctx, c, o, true) != nil {
		return auditWithheld(c.Tool)
	}
	return nil
}

func (a *AuditRecorder) redactor(e *registry.Entry) *policy.Redactor {
	if r, ok := a.redactors.Load(e); ok {
		return r.(*policy.Redactor)
	}
	r, _ := a.redactors.LoadOrStore(e, policy.RedactorFor(e.Schema.Sensitivity()))
	return r.(*policy.Redactor)
}

// Prune forgets the Redactors of tool revisions no longer registered
// (call it on each registry change), so the cache stays bounded.
func (a *AuditRecorder) Prune(live []*registry.Entry) {
	keep := make(map[*registry.Entry]bool, len(live))
	for _, e := range live {
		keep[e] = true
	}
	a.redactors.Range(func(k, _ any) bool {
		if !keep[k.(*registry.Entry)] {
			a.redactors.Delete(k)
		}
		return true
	})
}
