package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
)

// Federated runs f over the session of an upstream MCP server (the one
// its tools' calls use, made when there is none) for the MCP face's
// resources, prompts and completions (server/mcpapi): under the same
// guards as a tools/call — the credential must be one the policy declares
// for the upstream, the budget is the caller's deadline or the default
// timeout (capped by the maximum), and over HTTP the upstream's responses
// share the backend receive limit, crossing it ending the request
// (an error wrapping mcpupstream.ErrResponseTooLarge). Over stdio the SDK bounds each message (16 MiB):
// the caller checks what f read against MaxResponseBytes (and refuses it
// with an error wrapping mcpupstream.ErrResponseTooLarge). An error names
// the upstream's URL: it is for the log, never for a caller.
func (m *MCPUpstream) Federated(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, f func(context.Context, *mcp.ClientSession) error) error {
	return m.federatedOn(ctx, up, ts, func(ctx context.Context, cs *mcp.ClientSession, _ *mcpupstream.Caller) error { return f(ctx, cs) })
}

// federatedOn is Federated whose f also gets the session's Caller (nil
// over stdio).
func (m *MCPUpstream) federatedOn(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, f func(context.Context, *mcp.ClientSession, *mcpupstream.Caller) error) error {
	ctx, done, err := m.federatedContext(ctx, up)
	if err != nil {
		return err
	}
	defer done()
	// As for a call: a second try only when the upstream did not know the
	// pooled session, which means the request did not run there.
	for try := 0; ; try++ {
		s, cs, caller, fresh, err := m.session(ctx, up, ts, "")
		if err != nil {
			return m.federatedFailure(ctx, err)
		}
		err = f(ctx, cs, caller)
		m.release(s)
		if err == nil {
			return nil
		}
		// A JSON-RPC error, or f's own refusal of an answer it read whole
		// (wrapping ErrResponseTooLarge) or of a round the session cannot
		// carry, leaves the session sound: over stdio dropping it would
		// end the process for nothing.
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) && !errors.Is(err, mcpupstream.ErrResponseTooLarge) && !errors.Is(err, errNoRounds) {
			m.drop(s, cs)
		}
		if try == 0 && !fresh && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
			continue
		}
		return m.federatedFailure(ctx, err)
	}
}

func (m *MCPUpstream) federatedFailure(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), mcpupstream.ErrResponseTooLarge) {
		return fmt.Errorf("%w: %v", mcpupstream.ErrResponseTooLarge, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %v", ctxErr, err)
	}
	return err
}

// IdentityMode is the upstream identity mode the policy in force chooses
// for the gateway tool named tool, imported from up. Federated requests
// and task follow-ups go on the upstream's shared session with its static
// credential, so the face federates nothing of an upstream under any
// other mode (a per-user one): the caller would be served as the gateway.
func (m *MCPUpstream) IdentityMode(tool string, up *registry.MCPTool) identity.Mode {
	var r *identity.Resolver
	if f := m.ts.cfg.Identity; f != nil {
		r = f()
	}
	return r.Mode(identity.Target{Tool: tool, Upstream: up.URL})
}

// MaxResponseBytes is the backend receive limit an upstream's answer is
// held to.
func (m *MCPUpstream) MaxResponseBytes() int { return m.ts.cfg.MaxRecvMsgSize }

// Current is what the upstream's live session said of itself when it was
// made — its capabilities — and the session's generation, which changes
// when a session is made again and when the upstream notifies that its
// prompts or resources changed (a stdio server: an HTTP session has no
// standing stream to hear it on). It never contacts the upstream nor makes
// a session: with none, caps is nil and generation 0.
func (m *MCPUpstream) Current(up *registry.MCPTool, ts *registry.TransportSecurity) (caps *mcp.ServerCapabilities, generation uint64) {
	m.mu.Lock()
	s := m.sessions[keyFor(up, ts)]
	m.mu.Unlock()
	if s == nil {
		return nil, 0
	}
	cs := s.live.Load()
	if cs == nil {
		return nil, 0
	}
	if ir := cs.InitializeResult(); ir != nil {
		caps = ir.Capabilities
	}
	return caps, s.generation.Load()
}

// federatedContext is what every request of the gateway's own to an
// upstream starts with (Federated, the task relays): the policy's check of
// the upstream's credential, the backend receive limit on its responses,
// and the budget (the caller's deadline or the default timeout, capped by
// the maximum). done releases both.
func (m *MCPUpstream) federatedContext(ctx context.Context, up *registry.MCPTool) (context.Context, func(), error) {
	if allowed := m.ts.cfg.CredentialAllowed; allowed != nil {
		if err := allowed(up); err != nil {
			return ctx, nil, fmt.Errorf("upstream %s: its credential is not declared by the policy: %w", up.URL, err)
		}
	}
	ctx, stop := mcpupstream.WithResponseLimit(ctx, int64(m.ts.cfg.MaxRecvMsgSize))
	budget := m.ts.cfg.DefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = max(time.Until(d), 0)
	}
	if mx := m.ts.cfg.MaxTimeout; mx > 0 && mx < budget {
		budget = mx
	}
	if budget <= 0 {
		return ctx, stop, nil
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	return ctx, func() { cancel(); stop() }, nil
}
