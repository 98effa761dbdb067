package backend

import (
	"context"
	"fmt"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
)

// MDAuthorization is the metadata a gRPC backend (ToolBackendService, gRPC
// method) receives a non-static identity mode's token in, as "Bearer
// <token>" — the header HTTP and MCP upstreams receive it in.
const MDAuthorization = "authorization"

type credentialKey struct{}

// withIdentity resolves the call's identity (server/identity) before any
// kind sends it, records its mode and subject for the audit line, and
// carries it in the context to the kind; a refusal or failure ends the
// call unsent.
func (k *Kinds) withIdentity(ctx context.Context, kind registry.Kind, c *pipeline.Call) (context.Context, error) {
	var r *identity.Resolver
	if f := k.ToolService.cfg.Identity; f != nil {
		r = f()
	}
	cred, err := r.Resolve(ctx, c.Caller, identity.Target{Tool: c.Tool, Upstream: upstreamOf(kind, c), CallID: c.CallID})
	if err != nil {
		return ctx, err
	}
	c.SetBackendIdentity(string(cred.Mode), cred.Subject)
	if cred.Token() == "" {
		return ctx, nil
	}
	return context.WithValue(ctx, credentialKey{}, cred), nil
}

// credentialFrom is the call's non-static identity (ok false: static).
func credentialFrom(ctx context.Context) (identity.Credential, bool) {
	c, ok := ctx.Value(credentialKey{}).(identity.Credential)
	return c, ok
}

// bearer is the Authorization value of the call's non-static identity.
func bearer(ctx context.Context) (string, bool) {
	if c, ok := credentialFrom(ctx); ok {
		return "Bearer " + c.Token(), true
	}
	return "", false
}

// mcpIdentity is the MCP kind's part: the token rides in the context to
// the session's HTTP client (mcpupstream.WithHeader), which sends it on
// this call's requests only; a stdio server, which has no header to send
// it in, fails the call closed.
func mcpIdentity(ctx context.Context, c *pipeline.Call, up *registry.MCPTool) (context.Context, string, error) {
	cred, ok := credentialFrom(ctx)
	if !ok {
		return ctx, "", nil
	}
	if _, stdio := registry.StdioName(up.URL); stdio {
		return ctx, "", &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonIdentityUnavailable, Tool: c.Tool,
			Cause:   fmt.Errorf("identity mode %s on a stdio upstream", cred.Mode),
			Message: fmt.Sprintf("tool %q: its identity mode needs an HTTP upstream; a stdio server cannot be sent a caller's token", c.Tool)}
	}
	return mcpupstream.WithHeader(ctx, mcpupstream.Header{Name: "Authorization", Value: "Bearer " + cred.Token()}), cred.Subject, nil
}
