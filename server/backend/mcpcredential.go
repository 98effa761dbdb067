package backend

import (
	"fmt"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// credentialUndeclared fails a call closed, before any credential is read,
// when its tool names a credential source the policy in force does not
// declare for the tool's origin (a reload removed it, or the tool was
// stored before it was declared): FailedPrecondition naming the tool —
// never the source or the URL, which are in the cause, for the log.
func (m *MCPUpstream) credentialUndeclared(c *pipeline.Call, up *registry.MCPTool) *pipeline.Error {
	allowed := m.ts.cfg.CredentialAllowed
	if allowed == nil {
		return nil
	}
	err := allowed(up)
	if err == nil {
		return nil
	}
	return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonCredentialUndeclared, Tool: c.Tool,
		Cause:   fmt.Errorf("upstream %s: %w", up.URL, err),
		Message: fmt.Sprintf("tool %q: the credential it names is not one the gateway's policy declares for its upstream; an operator must declare it (credentials) or an admin change the tool", c.Tool)}
}
