package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Multi round-trip prompts/get and resources/read (MCP 2026-07-28,
// SEP-2322) of federated upstreams: the rounds of tools/call (input.go)
// on a request the face sends the upstream itself (Upstreams'
// FederatedRound). A 2026-07-28 caller's request opens its round (its
// declared kinds; on a retry its answers and the sealed state, held to
// the caller, the method, the prompt's name or the face URI and the
// clock); an upstream that asks for input gets its requests checked as a
// tool's are, and the caller gets them with the gateway's sealed state
// (the upstream, its prompt name or URI, its own requestState, the
// caller, the method, the name, the round, the expiry). A caller before
// 2026-07-28 has no round: the upstream is told it can answer nothing,
// and its asking anyway is refused.

// federatedRound is the round of a federated request q under revision
// rev: nil before 2026-07-28 (a retry's fields refused there), else
// openRound's.
func (m *Server) federatedRound(ctx context.Context, q roundRequest, rev string, meta mcp.Meta, responses mcp.InputResponseMap, state string) (*pipeline.InputRound, error) {
	if rev >= RevisionResultType {
		return m.openRound(ctx, q, meta, responses, state)
	}
	if state != "" || responses != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s %q: inputResponses and requestState are protocol revision %s's (multi round-trip); this request is on %q", q.method, policy.Bound(q.name), RevisionResultType, rev)}
	}
	return nil, nil
}

// roundInput is what the backend needs of q's round r, for the upstream's
// name of it.
func roundInput(q roundRequest, upstream string, r *pipeline.InputRound) pipeline.FederatedInput {
	w := roundWords[q.method]
	return pipeline.FederatedInput{Noun: w.noun, Name: q.name, Again: w.it, Method: q.method, Upstream: upstream, Round: r}
}

// withUpstreamRound sends params to u as in says (Upstreams.FederatedRound).
func (m *Server) withUpstreamRound(ctx context.Context, u *federatedUpstream, in pipeline.FederatedInput, params mcp.Params, out mcp.Result) error {
	spec := u.spec
	return m.upstreams.FederatedRound(withoutSDKValues(ctx), &spec, u.tls, in, params, out)
}

// MCPCodeInputForbidden: the policy forbids the upstream of a federated
// prompts/get or resources/read to ask its caller for the kind of input it
// asked for (mcp_upstreams.input.forbid): the caller may call, this
// upstream may not ask it.
const MCPCodeInputForbidden = -32015

// roundRefusal is a refused round as the caller's JSON-RPC error (nil:
// err is no refusal): the request has no isError result to carry it, so
// each reason has its code — the policy's forbid MCPCodeInputForbidden,
// a kind the caller did not declare 2026-07-28's -32021 naming it, a
// caller that cannot answer at all (before 2026-07-28) invalid request,
// requests or state over the bounds the upstream-too-large code, a round
// for what changed since invalid params.
func roundRefusal(err error) error {
	var pe *pipeline.Error
	if !errors.As(err, &pe) {
		return nil
	}
	switch pe.Reason {
	case pipeline.ReasonInputForbidden:
		return &jsonrpc.Error{Code: MCPCodeInputForbidden, Message: pe.Message}
	case pipeline.ReasonInputUnsupported:
		if len(pe.Required) > 0 {
			return missingCapability(pe)
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: pe.Message}
	case pipeline.ReasonInputTooLarge:
		return &jsonrpc.Error{Code: MCPCodeUpstreamTooLarge, Message: pe.Message}
	case pipeline.ReasonInputStale:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: pe.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// auditRound writes a federated request's audit line (auditFederated)
// with its round: its number, the kinds its upstream asked for and how
// many answers it relayed, never what.
func (m *Server) auditRound(ctx context.Context, method, name string, start time.Time, decision, reason string, args map[string]string, r *pipeline.InputRound, repairs ...policy.AuditRepair) error {
	rec := m.federatedRecord(ctx, method, name, start, decision, reason, args, repairs...)
	if r != nil {
		rec.InputRound, rec.InputAnswered = r.Round, r.Answered
		if r.Asked {
			rec.InputAsked = r.Kinds
		}
	}
	return m.pipe.Audit().RecordFederated(ctx, rec)
}

// auditRefusal is auditRound for a refused round (roundRefusal's err).
func (m *Server) auditRefusal(ctx context.Context, method, name string, start time.Time, err error, args map[string]string, r *pipeline.InputRound, repairs ...policy.AuditRepair) {
	var pe *pipeline.Error
	if errors.As(err, &pe) {
		m.auditRound(ctx, method, name, start, pe.Spec().Decision, string(pe.Reason), args, r, repairs...)
	}
}

// inputRequired marks r, a fresh result of a round that asks for input,
// as such (the go-sdk sets resultType only through JSON: completeUnder).
func inputRequired[R json.Unmarshaler](r R) R {
	_ = r.UnmarshalJSON([]byte(`{"resultType":"` + resultTypeInputRequired + `"}`))
	return r
}
