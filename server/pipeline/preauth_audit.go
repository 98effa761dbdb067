package pipeline

import (
	"time"

	"github.com/flowdrop/gateway/internal/policy"
)

// RecordPreAuthRefusal writes the audit line of a call refused for its
// credentials before its request was read (gRPC refuses such calls on
// their headers): the operation (the method's name) and the reason, no
// caller, and no tool or call id — those are in the request the gateway
// never read. It never waits (a full queue drops the line, counted). Nil
// on a nil recorder.
func (a *AuditRecorder) RecordPreAuthRefusal(operation, reason string) {
	if a == nil {
		return
	}
	rec := policy.AuditRecord{Time: time.Now(), Operation: operation, Decision: policy.DecisionDeny, Reason: reason}
	if err := a.sink.Write(rec); err != nil && a.log != nil {
		a.log("audit record not written", err)
	}
}
