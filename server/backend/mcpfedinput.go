package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// A federated prompts/get or resources/read whose upstream asks its caller
// for input (MCP 2026-07-28 multi round-trip): the rounds are tools/call's
// (mcpinput.go) — the same declaration to the upstream, refusals, bounds
// and staleness check — on a request the MCP face sends through
// FederatedRound instead of a pipeline call.

// errNoRounds is a retry for an upstream session that cannot carry one.
var errNoRounds = errors.New("the upstream's session carries no multi round-trip retry")

// FederatedRound sends params (*mcp.GetPromptParams or
// *mcp.ReadResourceParams) as in.Method to up, under Federated's guards,
// and decodes the answer into out (*mcp.GetPromptResult or
// *mcp.ReadResourceResult). Over streamable HTTP the gateway sends it
// itself (mcpupstream.Caller.Request), its _meta declaring what the caller
// declared narrowed by the policy's forbid for up, and a retry's answers
// with the upstream's own requestState; over stdio and legacy SSE it goes
// through the SDK declaring no input, and a retry is refused, as for
// tools/call. An upstream's InputRequiredResult is checked as a
// tools/call's (roundAsks); a refusal, there or of the upstream's -32021
// (needsInput), is a *pipeline.Error; any other error is Federated's (for
// the log).
func (m *MCPUpstream) FederatedRound(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, in pipeline.FederatedInput, params mcp.Params, out mcp.Result) error {
	t := inputTarget{noun: in.Noun, name: in.Name, again: in.Again, url: up.URL, upstream: in.Upstream}
	retry, perr := retryFor(t, in.Round)
	if perr != nil {
		return perr
	}
	var kinds mcpupstream.InputKinds
	if r := in.Round; r != nil {
		kinds = mcpupstream.InputKinds{Elicitation: r.CanAnswer[pipeline.InputElicitation], Sampling: r.CanAnswer[pipeline.InputSampling]}
	}
	ctx = mcpupstream.WithCallerInput(ctx, kinds)
	err := m.federatedOn(ctx, up, ts, func(ctx context.Context, cs *mcp.ClientSession, caller *mcpupstream.Caller) error {
		if caller != nil && caller.Rounds() {
			return caller.Request(ctx, in.Method, in.Upstream, params, retry, out)
		}
		if retry != nil {
			return errNoRounds
		}
		params.SetMeta(mcpupstream.NoInputMeta(cs, params.GetMeta()))
		return sdkRequest(ctx, cs, params, out)
	})
	if errors.Is(err, errNoRounds) {
		return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputUnsupported, Tool: in.Name,
			Message: fmt.Sprintf("%s: its upstream is a stdio or legacy SSE server, whose rounds of requests for input (2026-07-28) the gateway does not relay", t)}
	}
	if err != nil {
		if pe := m.needsInput(t, in.Round, err); pe != nil {
			return pe
		}
		return err
	}
	requests, state, err := roundOf(out)
	if err != nil || requests == nil {
		return err
	}
	return m.roundAsks(t, in.Round, requests, state)
}

// sdkRequest sends params on cs through the SDK into out, by kind.
func sdkRequest(ctx context.Context, cs *mcp.ClientSession, params mcp.Params, out mcp.Result) error {
	switch p := params.(type) {
	case *mcp.GetPromptParams:
		o, ok := out.(*mcp.GetPromptResult)
		if !ok {
			break
		}
		r, err := cs.GetPrompt(ctx, p)
		if err != nil {
			return err
		}
		*o = *r
		return nil
	case *mcp.ReadResourceParams:
		o, ok := out.(*mcp.ReadResourceResult)
		if !ok {
			break
		}
		r, err := cs.ReadResource(ctx, p)
		if err != nil {
			return err
		}
		*o = *r
		return nil
	}
	return fmt.Errorf("no federated round request %T answered as %T", params, out)
}

// roundOf is what an upstream's answer asks of its caller: its input
// requests (nil: none, a complete result) and its requestState.
func roundOf(out mcp.Result) (mcp.InputRequestMap, string, error) {
	switch r := out.(type) {
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState, nil
	case *mcp.ReadResourceResult:
		return r.InputRequests, r.RequestState, nil
	}
	return nil, "", fmt.Errorf("no federated round result %T", out)
}
