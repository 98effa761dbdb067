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
}

// Recorder records outcomes: the audit log, metrics. RecordCall runs once
// per call; RecordBackend once per backend call.
type Recorder interface {
	RecordCall(ctx context.Context, c *Call, o Outcome)
	RecordBackend(tool, code string, d time.Duration)
}

// AuditRecorder writes one audit line per call to a policy.AuditSink, with
// the arguments as sent and as repaired, redacted by the tool's schema.
type AuditRecorder struct {
	sink *policy.AuditSink
	log  func(msg string, err error)

	// redactors caches one Redactor per registry entry (a tool revision),
	// over the compiled schema's Sensitivity (the one notion of sensitive,
	// which validation messages follow too).
	redactors sync.Map // *registry.Entry -> *policy.Redactor
}

// NewAuditRecorder writes to sink; logf hears about records not written.
func NewAuditRecorder(sink *policy.AuditSink, logf func(msg string, err error)) *AuditRecorder {
	return &AuditRecorder{sink: sink, log: logf}
}

// RecordBackend is a no-op: the backend's code is in the call's line.
func (a *AuditRecorder) RecordBackend(string, string, time.Duration) {}

// RecordCall writes the call's audit line.
func (a *AuditRecorder) RecordCall(_ context.Context, c *Call, o Outcome) {
	rec := policy.AuditRecord{
		Time:        c.start,
		Tool:        c.Tool,
		CallID:      c.CallID,
		Decision:    o.Decision,
		Reason:      o.Reason,
		Repairs:     policy.RepairsFromReport(c.Report),
		Validation:  o.Validation,
		BackendCode: o.BackendCode,
		LatencyMS:   float64(o.Latency.Microseconds()) / 1000,
	}
	if e := o.Err; e != nil && e.Kind == KindValidation {
		for _, v := range e.Violations {
			rec.Violations = append(rec.Violations, v.Pointer+": "+v.Message)
		}
	}
	if c.HasCaller {
		rec.CallerSubject, rec.CallerMethod = c.Caller.Subject, c.Caller.Method
	}
	if c.Entry == nil {
		// No schema to say what is sensitive: log no values at all.
		a.write(rec)
		return
	}
	sent := c.Sent()
	repaired := c.args
	if repaired == sent {
		repaired = nil
	}
	if err := rec.SetArgs(a.redactor(c.Entry), sent, repaired); err != nil {
		rec.ArgsSent, rec.ArgsRepaired = nil, nil
	}
	a.write(rec)
}

func (a *AuditRecorder) write(rec policy.AuditRecord) {
	if err := a.sink.Write(rec); err != nil && a.log != nil {
		a.log("audit record not written", err)
	}
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
