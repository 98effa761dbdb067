package pipeline

import (
	"context"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// RegistryWrite is what the audit line of one registry write says: who
// (when the call was authenticated), which write of which tool, its
// outcome, and the revision a registration made.
type RegistryWrite struct {
	Start     time.Time
	Caller    policy.Caller
	HasCaller bool
	// Operation is the write's method name (RegisterTool, DeleteTool).
	Operation string
	Tool      string
	Revision  int64
	// Decision is policy.DecisionAllow (applied), DecisionDeny (refused by
	// authentication or authorization) or DecisionError (refused for
	// anything else; Reason says why).
	Decision, Reason string
}

// BeginRegistryWrite refuses a registry write up front while fail-closed
// audit cannot write (as the audit stage refuses a call): no change is
// made that could not be recorded. Nil on a nil recorder.
func (a *AuditRecorder) BeginRegistryWrite(tool string) *Error {
	if !a.Writable() {
		return auditUnavailable(tool)
	}
	return nil
}

// RecordRegistryWrite writes w's line. Under fail-closed it waits for the
// line; if an applied write's line is not written the caller gets
// Unavailable saying the change was made but not recorded (the write is
// not undone: another replica may have acted on it). A refusal is
// answered as it is. Nil on a nil recorder.
func (a *AuditRecorder) RecordRegistryWrite(ctx context.Context, w RegistryWrite) *Error {
	if a == nil {
		return nil
	}
	rec := policy.AuditRecord{Time: w.Start, Tool: w.Tool, Decision: w.Decision, Reason: w.Reason,
		Operation: w.Operation, Revision: w.Revision, LatencyMS: float64(time.Since(w.Start).Microseconds()) / 1000}
	if w.HasCaller {
		rec.CallerSubject, rec.CallerMethod = w.Caller.Subject, w.Caller.Method
	}
	if !a.failClosed {
		if err := a.sink.Write(rec); err != nil && a.log != nil {
			a.log("audit record not written", err)
		}
		return nil
	}
	err := a.sink.WriteWait(ctx, rec)
	if err == nil {
		return nil
	}
	if a.log != nil {
		a.log("audit record not written", err)
	}
	if w.Decision != policy.DecisionAllow {
		return nil
	}
	return &Error{Code: Unavailable, Reason: ReasonAuditUnavailable, Tool: w.Tool,
		Message: "audit log unavailable: the registry change was made but could not be recorded"}
}
