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
// A federated prompts/get or resources/read has the same rounds, its state
// sealed alike and bound besides to its method (fedinput.go).

// InputState is how the face seals round state: Keys (the first seals,
// all open) and TTL, a round's lifetime.
type InputState struct {
	Keys *sealedstate.Keyring
	TTL  time.Duration
}

// roundPurpose binds a sealed round state to this use and format: the
// round of any multi round-trip request (tools/call, prompts/get,
// resources/read; roundState.Request says which). Named when tools/call
// was the only one; kept so states in flight stay good across an upgrade.
const roundPurpose = "mcp-tools-call-round/v1"

// maxSealedState bounds a caller's requestState before it is opened: the
// upstream's state is bounded, and so are the names it is sealed with (a
// resource's face and upstream URIs, maxUpstreamURIBytes each), so a
// longer one is none of ours.
const maxSealedState = 2*(pipeline.InputMaxUpstreamState+2*maxUpstreamURIBytes) + 4096

// roundState is what a round's sealed requestState holds. Tool is the
// gateway's name of what the round is for (a tool, a prompt, a resource's
// face URI) and UpstreamTool the upstream's; Method is the caller's
// authentication method, Request the MCP method ("" for tools/call, so a
// tools/call state reads as it did before the others had rounds).
type roundState struct {
	Tool         string `json:"tool"`
	Request      string `json:"request,omitempty"`
	Upstream     string `json:"upstream"`
	UpstreamTool string `json:"upstream_tool"`
	State        string `json:"state,omitempty"`
	Subject      string `json:"subject"`
	Method       string `json:"method"`
	Round        int    `json:"round"`
	Expires      int64  `json:"expires"` // Unix seconds
}

// roundRequest is what a round is of: the MCP method and the gateway's
// name of what it is for.
type roundRequest struct{ method, name string }

// roundWords are how refusals speak of each method's rounds: what the
// name names, and how the caller starts over (again; it: the backend's
// words, after naming it).
var roundWords = map[string]struct{ noun, again, it string }{
	"tools/call":     {"tool", "call the tool again", "call it"},
	"prompts/get":    {"prompt", "get the prompt again", "get it"},
	"resources/read": {"resource", "read the resource again", "read it"},
}

// stateRequest is the request as a roundState records it.
func (q roundRequest) stateRequest() string {
	if q.method == "tools/call" {
		return ""
	}
	return q.method
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

// inputRound is the round a 2026-07-28 tools/call is (openRound).
func (m *Server) inputRound(ctx context.Context, p *mcp.CallToolParamsRaw) (*pipeline.InputRound, error) {
	return m.openRound(ctx, roundRequest{"tools/call", p.Name}, p.Meta, p.InputResponses, p.RequestState)
}

// openRound is the round a 2026-07-28 request q is: the first when it
// carries neither inputResponses nor requestState, else the retry its
// sealed state says, refused as invalid params when the state is not
// one the gateway sealed (tampered, or under a key no longer held), has
// expired, is another caller's or another request's (method or name), or
// is missing.
func (m *Server) openRound(ctx context.Context, q roundRequest, meta mcp.Meta, responses mcp.InputResponseMap, state string) (*pipeline.InputRound, error) {
	r := &pipeline.InputRound{Round: 1, CanAnswer: clientCanAnswer(meta)}
	if state == "" && responses == nil {
		return r, nil
	}
	words := roundWords[q.method]
	refuse := func(format string, a ...any) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s %q: ", q.method, policy.Bound(q.name)) + fmt.Sprintf(format, a...)}
	}
	if state == "" {
		return nil, refuse("inputResponses without the requestState of the round they answer")
	}
	if len(state) > maxSealedState {
		return nil, refuse("requestState is not one this gateway issued")
	}
	st := m.inputState()
	plain, err := st.Keys.Open(roundPurpose, state)
	if err != nil {
		return nil, refuse("requestState is not one this gateway issued (changed, or sealed under a key it no longer holds); %s without inputResponses and requestState", words.again)
	}
	var rs roundState
	if err := json.Unmarshal(plain, &rs); err != nil {
		return nil, refuse("requestState is not one this gateway issued")
	}
	if time.Now().Unix() > rs.Expires {
		return nil, refuse("requestState expired at %s; %s without inputResponses and requestState",
			time.Unix(rs.Expires, 0).UTC().Format(time.RFC3339), words.again)
	}
	caller, _ := policy.CallerFrom(ctx)
	if rs.Subject != caller.Subject || rs.Method != caller.Method {
		return nil, refuse("requestState was issued to another caller")
	}
	if rs.Request != q.stateRequest() {
		return nil, refuse("requestState was issued for another request than %s", q.method)
	}
	if rs.Tool != q.name {
		return nil, refuse("requestState was issued for another %s", words.noun)
	}
	var raw json.RawMessage
	if responses != nil {
		if raw, err = json.Marshal(responses); err != nil {
			return nil, refuse("inputResponses do not encode: %v", err)
		}
		if len(raw) > pipeline.InputMaxResponseBytes {
			return nil, refuse("inputResponses are %d bytes, over the gateway's bound of %d", len(raw), pipeline.InputMaxResponseBytes)
		}
	}
	r.Round, r.Responses, r.Answered = rs.Round+1, raw, len(responses)
	r.State, r.Upstream, r.UpstreamTool = rs.State, rs.Upstream, rs.UpstreamTool
	return r, nil
}

// inputRequiredResult is the round's answer to the caller of tools/call:
// the upstream's requests and the gateway's sealed state for the next
// round.
func (m *Server) inputRequiredResult(ctx context.Context, tool string, r *pipeline.InputRound) (*callResult, error) {
	state, err := m.sealRound(ctx, roundRequest{"tools/call", tool}, r)
	if err != nil {
		return nil, err
	}
	return &callResult{InputRequests: r.Requests, RequestState: state, ResultType: resultTypeInputRequired}, nil
}

// sealRound is the requestState the caller of q gets for round r: the
// gateway's round state sealed under its key.
func (m *Server) sealRound(ctx context.Context, q roundRequest, r *pipeline.InputRound) (string, error) {
	caller, _ := policy.CallerFrom(ctx)
	st := m.inputState()
	plain, err := json.Marshal(roundState{Tool: q.name, Request: q.stateRequest(), Upstream: r.Upstream, UpstreamTool: r.UpstreamTool, State: r.NextState,
		Subject: caller.Subject, Method: caller.Method, Round: r.Round, Expires: time.Now().Add(st.TTL).Unix()})
	if err != nil {
		return "", err
	}
	return st.Keys.Seal(roundPurpose, plain), nil
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
