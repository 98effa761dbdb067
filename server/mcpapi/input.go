package mcpapi

//lint:file-ignore SA1019 sampling and roots are deprecated by SEP-2577 (2026-07-28) yet still asked for by upstreams during the deprecation window; the gateway relays them

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/sealedstate"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Multi round-trip tools/call (MCP 2026-07-28, SEP-2322) through the
// stateless face. An upstream tool that needs its caller's input answers
// with inputRequests and a requestState; the face relays the requests and
// gives the caller a requestState of its own: the gateway's round state
// (the gateway tool, the upstream and its tool, the upstream's state, the
// caller, the round and an expiry) sealed under the gateway's key
// (internal/sealedstate), so any replica holding the key continues the
// round and nothing is kept between rounds. The caller's retry carries
// its inputResponses and that state back; the face opens it, holds it to
// the caller, the tool and the clock, and runs the retry as a whole call
// (every stage: policy and normalization apply on each round) whose
// backend sends the answers and the upstream's own state to the upstream
// tool that asked. Callers before 2026-07-28 (and gRPC callers) get no
// round: a tool that asks them for input is refused (input-unsupported).

// InputState is how the face seals round state: Keys (the first seals,
// all open) and TTL, a round's lifetime.
type InputState struct {
	Keys *sealedstate.Keyring
	TTL  time.Duration
}

// roundPurpose binds a sealed round state to this use and format.
const roundPurpose = "mcp-tools-call-round/v1"

// maxSealedState bounds a caller's requestState before it is opened: the
// upstream's state is bounded, so a longer one is none of ours.
const maxSealedState = 2*pipeline.InputMaxUpstreamState + 4096

// roundState is what a round's sealed requestState holds.
type roundState struct {
	Tool         string `json:"tool"`
	Upstream     string `json:"upstream"`
	UpstreamTool string `json:"upstream_tool"`
	State        string `json:"state,omitempty"`
	Subject      string `json:"subject"`
	Method       string `json:"method"`
	Round        int    `json:"round"`
	Expires      int64  `json:"expires"` // Unix seconds
}

// inputState is the state the face seals with now.
func (m *Server) inputState() InputState {
	st := m.input()
	if st.TTL <= 0 {
		st.TTL = pipeline.InputDefaultStateTTL
	}
	if st.Keys == nil {
		st.Keys = m.randomKeys
	}
	return st
}

// clientCanAnswer is which kinds of input the request's client declared it
// can fulfil (its per-request clientCapabilities, 2026-07-28's _meta).
func clientCanAnswer(meta mcp.Meta) map[string]bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	can := map[string]bool{}
	for k, kind := range map[string]string{"elicitation": pipeline.InputElicitation, "sampling": pipeline.InputSampling, "roots": pipeline.InputRoots} {
		if v, ok := caps[k]; ok && v != nil {
			can[kind] = true
		}
	}
	return can
}

// inputRound is the round a 2026-07-28 tools/call is: the first when it
// carries neither inputResponses nor requestState, else the retry its
// sealed state says, refused as invalid params when the state is not
// one the gateway sealed (tampered, or under a key no longer held), has
// expired, is another caller's or another tool's, or is missing.
func (m *Server) inputRound(ctx context.Context, p *mcp.CallToolParamsRaw) (*pipeline.InputRound, error) {
	r := &pipeline.InputRound{Round: 1, CanAnswer: clientCanAnswer(p.Meta)}
	if p.RequestState == "" && p.InputResponses == nil {
		return r, nil
	}
	refuse := func(format string, a ...any) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("tools/call %q: ", policy.Bound(p.Name)) + fmt.Sprintf(format, a...)}
	}
	if p.RequestState == "" {
		return nil, refuse("inputResponses without the requestState of the round they answer")
	}
	if len(p.RequestState) > maxSealedState {
		return nil, refuse("requestState is not one this gateway issued")
	}
	st := m.inputState()
	plain, err := st.Keys.Open(roundPurpose, p.RequestState)
	if err != nil {
		return nil, refuse("requestState is not one this gateway issued (changed, or sealed under a key it no longer holds); call the tool again without inputResponses and requestState")
	}
	var rs roundState
	if err := json.Unmarshal(plain, &rs); err != nil {
		return nil, refuse("requestState is not one this gateway issued")
	}
	if time.Now().Unix() > rs.Expires {
		return nil, refuse("requestState expired at %s; call the tool again without inputResponses and requestState",
			time.Unix(rs.Expires, 0).UTC().Format(time.RFC3339))
	}
	caller, _ := policy.CallerFrom(ctx)
	if rs.Subject != caller.Subject || rs.Method != caller.Method {
		return nil, refuse("requestState was issued to another caller")
	}
	if rs.Tool != p.Name {
		return nil, refuse("requestState was issued for another tool")
	}
	var responses json.RawMessage
	if p.InputResponses != nil {
		if responses, err = json.Marshal(p.InputResponses); err != nil {
			return nil, refuse("inputResponses do not encode: %v", err)
		}
		if len(responses) > pipeline.InputMaxResponseBytes {
			return nil, refuse("inputResponses are %d bytes, over the gateway's bound of %d", len(responses), pipeline.InputMaxResponseBytes)
		}
	}
	r.Round, r.Responses, r.Answered = rs.Round+1, responses, len(p.InputResponses)
	r.State, r.Upstream, r.UpstreamTool = rs.State, rs.Upstream, rs.UpstreamTool
	return r, nil
}

// inputRequiredResult is the round's answer to the caller: the upstream's
// requests and the gateway's sealed state for the next round.
func (m *Server) inputRequiredResult(ctx context.Context, tool string, r *pipeline.InputRound) (*callResult, error) {
	caller, _ := policy.CallerFrom(ctx)
	st := m.inputState()
	plain, err := json.Marshal(roundState{Tool: tool, Upstream: r.Upstream, UpstreamTool: r.UpstreamTool, State: r.NextState,
		Subject: caller.Subject, Method: caller.Method, Round: r.Round, Expires: time.Now().Add(st.TTL).Unix()})
	if err != nil {
		return nil, err
	}
	return &callResult{InputRequests: r.Requests, RequestState: st.Keys.Seal(roundPurpose, plain), ResultType: resultTypeInputRequired}, nil
}

// resultTypeInputRequired is a result that asks its caller for input.
const resultTypeInputRequired = "input_required"

// missingCapability is 2026-07-28's error for a call that needs client
// capabilities its caller did not declare (-32021, naming them).
func missingCapability(e *pipeline.Error) error {
	caps := &mcp.ClientCapabilities{}
	for _, k := range e.Required {
		switch k {
		case pipeline.InputElicitation:
			caps.Elicitation = &mcp.ElicitationCapabilities{}
		case pipeline.InputSampling:
			caps.Sampling = &mcp.SamplingCapabilities{}
		case pipeline.InputRoots:
			caps.RootsV2 = &mcp.RootCapabilities{}
		}
	}
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: caps})
	if err != nil {
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: e.Message}
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: e.Message, Data: data}
}
