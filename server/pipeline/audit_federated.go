package pipeline

import (
	"context"

	"github.com/flowdrop/gateway/internal/policy"
)

// RecordFederated writes the audit line of an MCP request that reaches an
// upstream MCP server without being a tool call (resources/read,
// prompts/get: the MCP face's federation), rec as the face filled it. Under
// fail-closed it waits for the line and returns the sink's error, so the
// face withholds an answer whose line was not written; under fail-open it
// never waits. A nil recorder (no audit log) writes nothing.
func (a *AuditRecorder) RecordFederated(ctx context.Context, rec policy.AuditRecord) error {
	if a == nil {
		return nil
	}
	var err error
	if a.failClosed {
		err = a.sink.WriteWait(ctx, rec)
	} else {
		err = a.sink.Write(rec)
	}
	if err != nil && a.log != nil {
		a.log("audit record not written", err)
	}
	return err
}
