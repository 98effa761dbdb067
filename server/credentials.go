package server

import (
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

// The credential sources the policy in force declares (credentials:) hold
// every path by which a tool's credential reference is admitted or read:
// the registry's admission (RegisterTool, seeds, imports, the follower's
// writes) refuses a reference no source declares for the tool's origin,
// naming the field, without reading it; a call, and the follower's
// listing, whose tool names one fails closed before reading it (a reload
// can remove a source that stored tools still name).

// credentialCheck is the registry's admission check (WithAdmissionCheck).
func (g *Gateway) credentialCheck(t registry.Tool) *registry.ToolError {
	return credentialToolError(g.creds.Load(), t)
}

func credentialToolError(c *policy.CredentialSources, t registry.Tool) *registry.ToolError {
	if t.Spec == nil || t.Spec.MCPTool == nil {
		return nil
	}
	m := t.Spec.MCPTool
	if ce := c.Allow(m.CredentialEnv, m.CredentialFile, m.URL); ce != nil {
		return &registry.ToolError{Tool: t.Name, Field: "spec.mcp_tool." + ce.Field, Reason: ce.Reason}
	}
	return nil
}

// credentialAllowed is the backend's check before a call reads a tool's
// credential (ToolServiceConfig.CredentialAllowed).
func (g *Gateway) credentialAllowed(up *registry.MCPTool) error {
	if ce := g.creds.Load().Allow(up.CredentialEnv, up.CredentialFile, up.URL); ce != nil {
		return ce
	}
	return nil
}

// referenceAllowed is the follower's check before it reads a reference to
// reach url.
func (g *Gateway) referenceAllowed(url string, ref mcpupstream.Reference) error {
	return g.credentialAllowed(&registry.MCPTool{URL: url, CredentialEnv: ref.Env, CredentialFile: ref.File})
}
