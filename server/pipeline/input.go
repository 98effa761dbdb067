package pipeline

import (
	"encoding/json"
	"time"
)

// An upstream MCP tool may ask its caller for input before it answers
// (elicitation, sampling, roots). On MCP 2026-07-28 that is the multi
// round-trip pattern (SEP-2322): the upstream answers tools/call with an
// InputRequiredResult (inputRequests and its requestState), the caller
// fulfils the requests and calls again with inputResponses and the state.
// The gateway holds nothing between rounds: the MCP face seals what it
// needs (which upstream and tool, the upstream's state, the caller, an
// expiry) into the state its caller carries, and each round is a whole
// call through every stage. InputRound is one round as the face and the
// backend share it.

// Bounds on one round: what an upstream may ask of a caller at once, and
// what a caller's answers may weigh when relayed to the upstream.
const (
	InputMaxRequests      = 16
	InputMaxRequestBytes  = 256 << 10
	InputMaxResponseBytes = 1 << 20
	// InputMaxUpstreamState bounds the upstream's requestState the
	// gateway carries sealed for it.
	InputMaxUpstreamState = 16 << 10
	// InputMaxRounds bounds the rounds of one call (as the go-sdk's
	// client bounds its own retries).
	InputMaxRounds = 10
	// InputDefaultStateTTL is how long a round's sealed state is good for
	// when the policy does not say: the caller's time to answer.
	InputDefaultStateTTL = 10 * time.Minute
)

// Kinds of input an upstream asks for (an inputRequests entry's method).
const (
	InputElicitation = "elicitation"
	InputSampling    = "sampling"
	InputRoots       = "roots"
)

// InputRound is one round of a multi round-trip call. The face sets the
// caller's side (what it may answer, its retry's responses and the
// upstream state it carried back); a backend whose upstream asks for
// input fills the rest and answers Result.InputRequired.
type InputRound struct {
	// Round is this round's number: 1 for a first call.
	Round int
	// CanAnswer says which kinds the caller declared it can fulfil
	// (its per-request client capabilities).
	CanAnswer map[string]bool
	// Responses is the caller's inputResponses object (nil on a first
	// call; Answered entries), and State the upstream's requestState from the previous
	// round, for Upstream's tool UpstreamTool: a backend sends them only
	// to that upstream tool.
	Responses              json.RawMessage
	Answered               int
	State                  string
	Upstream, UpstreamTool string

	// Set by the backend when its upstream asks for input: the
	// upstream's inputRequests object (bounded), its new requestState,
	// the kinds asked, and which upstream and tool asked.
	Asked     bool
	Requests  json.RawMessage
	NextState string
	Kinds     []string
}

// Retry reports whether the round answers an earlier one.
func (r *InputRound) Retry() bool { return r != nil && r.Round > 1 }

// InputRequired is the backend's answer when its upstream asked the
// caller for input: the face answers the round (Call.Input says what was
// asked), and nothing is stored under the call's idempotency key.
var InputRequired = Result{InputRequired: true}

// FederatedInput is what the MCP backend's FederatedRound needs of a
// federated request (the MCP face's prompts/get, resources/read) that may
// be answered with an InputRequiredResult.
type FederatedInput struct {
	// Noun and Name are how refusals name what the request is for
	// ("prompt" and its gateway name, "resource" and its face URI), Again
	// what its caller does to start over ("get it").
	Noun, Name, Again string
	// Method is the request's (prompts/get, resources/read), Upstream the
	// upstream's own name of what it is for (a prompt's name, a resource's
	// URI; the Mcp-Name header): a round's upstream state goes only there.
	Method, Upstream string
	// Round is the caller's round: what it declared it can answer, and its
	// retry; nil for a caller that cannot answer in rounds (before
	// 2026-07-28). When the upstream asks for input and the checks pass,
	// the backend fills it (Asked) for the face to answer the round.
	Round *InputRound
}
