package backend

//lint:file-ignore SA1019 sampling and roots are deprecated by SEP-2577 (2026-07-28) yet still asked for by upstreams during the deprecation window; the gateway relays them

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// An upstream MCP tool's request for its caller's input (MCP 2026-07-28
// multi round-trip, pipeline/input.go): the backend relays the caller's
// answers with the upstream's state to the upstream tool that asked, and
// an upstream's InputRequiredResult to the caller's round, after the
// policy (mcp_upstreams.input.forbid), the caller's capabilities and the
// bounds allow it. An upstream asking a caller that cannot answer gets no
// retry: on 2026-07-28 the upstream holds nothing open, so declining is
// not answering.

// inputTarget is what a round asks its caller's input for: the gateway's
// name of it as refusals say it (a tool, a prompt, a resource's URI), and
// the upstream and its own name of it, the only one a round's upstream
// state is ever sent to.
type inputTarget struct {
	noun, name    string
	again         string // what the caller does to start over ("call it")
	url, upstream string
}

func (t inputTarget) String() string { return fmt.Sprintf("%s %q", t.noun, t.name) }

func toolTarget(c *pipeline.Call, up *registry.MCPTool) inputTarget {
	return inputTarget{noun: "tool", name: c.Tool, again: "call it", url: up.URL, upstream: up.Tool}
}

// inputRetry is what a retry round sends the upstream: nil on a first
// call. A round whose state is for another upstream tool than the one
// the gateway tool calls now is stale (the tool changed between rounds):
// the upstream's state is never sent to another upstream.
func (m *MCPUpstream) inputRetry(c *pipeline.Call, up *registry.MCPTool) (*mcpupstream.Retry, *pipeline.Error) {
	return retryFor(toolTarget(c, up), c.Input)
}

func retryFor(t inputTarget, r *pipeline.InputRound) (*mcpupstream.Retry, *pipeline.Error) {
	if !r.Retry() {
		return nil, nil
	}
	if r.Upstream != t.url || r.UpstreamTool != t.upstream {
		return nil, &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputStale, Tool: t.name,
			Message: fmt.Sprintf("%s changed since the round that asked for input; %s again without inputResponses and requestState", t, t.again)}
	}
	return &mcpupstream.Retry{Responses: r.Responses, State: r.State}, nil
}

// inputRequired answers an upstream's InputRequiredResult (roundAsks).
func (m *MCPUpstream) inputRequired(c *pipeline.Call, up *registry.MCPTool, res *mcp.CallToolResult) (pipeline.Result, error) {
	if err := m.roundAsks(toolTarget(c, up), c.Input, res.InputRequests, res.RequestState); err != nil {
		if pe, ok := err.(*pipeline.Error); ok {
			return pipeline.Result{}, pe
		}
		return pipeline.Result{}, m.ts.failure(c, 0, "", err)
	}
	return pipeline.InputRequired, nil
}

// roundAsks checks an upstream's InputRequiredResult (its requests and
// state) for round r about t: refused (a *pipeline.Error) when the caller
// cannot answer (no round, r nil: gRPC, or MCP before 2026-07-28; or a
// kind it did not declare), when the policy forbids a kind asked for this
// upstream, or when the requests or the state are over the bounds; any
// other error is the upstream's malformed answer. Else r carries them to
// the face.
func (m *MCPUpstream) roundAsks(t inputTarget, r *pipeline.InputRound, requests mcp.InputRequestMap, state string) error {
	kinds, err := inputKinds(requests)
	if err != nil {
		return err
	}
	if perr := m.inputForbidden(t, kinds); perr != nil {
		return perr
	}
	var missing []string
	for _, k := range kinds {
		if r == nil || !r.CanAnswer[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s asks its caller for %s, which this caller did not declare it can answer (client capability %s)",
			t, strings.Join(missing, " and "), strings.Join(missing, ", "))
		required := missing
		if r == nil {
			// No capability would help this caller: Required stays empty.
			msg, required = fmt.Sprintf("%s asks its caller for %s, which only an MCP caller on protocol revision 2026-07-28 (or later) can answer through the gateway",
				t, strings.Join(missing, " and ")), nil
		}
		return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputUnsupported, Tool: t.name,
			Required: required, Message: msg}
	}
	if r.Round >= pipeline.InputMaxRounds {
		return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonInputTooLarge, Tool: t.name,
			Message: fmt.Sprintf("%s asked for input in %d rounds, the gateway's bound; it did not finish", t, pipeline.InputMaxRounds)}
	}
	reqs, err := json.Marshal(requests)
	if err != nil {
		return fmt.Errorf("the upstream's input requests do not encode: %w", err)
	}
	if len(requests) > pipeline.InputMaxRequests || len(reqs) > pipeline.InputMaxRequestBytes || len(state) > pipeline.InputMaxUpstreamState {
		return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonInputTooLarge, Tool: t.name,
			Message: fmt.Sprintf("%s asked for more input than the gateway relays (at most %d requests, %d bytes, and a state of %d bytes)",
				t, pipeline.InputMaxRequests, pipeline.InputMaxRequestBytes, pipeline.InputMaxUpstreamState)}
	}
	r.Asked, r.Requests, r.NextState, r.Kinds = true, reqs, state, kinds
	r.Upstream, r.UpstreamTool = t.url, t.upstream
	return nil
}

// upstreamNeedsInput is an upstream's -32021 (needsInput) for a call.
func (m *MCPUpstream) upstreamNeedsInput(c *pipeline.Call, up *registry.MCPTool, err error) *pipeline.Error {
	return m.needsInput(toolTarget(c, up), c.Input, err)
}

// needsInput is an upstream's -32021 (MCP 2026-07-28, SEP-2575: the
// request needs client capabilities its _meta did not declare) as the
// caller's refusal, nil for any other error. The gateway declares to the
// upstream what the caller declared, narrowed by the policy, so a kind
// the caller did not declare is the caller's -32021 naming it (Required),
// and one the policy withheld is input-forbidden. A capability the gateway
// does not relay (an extension, say), or none named, no declaration of the
// caller's could satisfy: input-unsupported without Required, which the
// face words as a tool error. The upstream's message is not passed on.
func (m *MCPUpstream) needsInput(t inputTarget, r *pipeline.InputRound, err error) *pipeline.Error {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities {
		return nil
	}
	// rpc.Data is bounded by the response limit; a malformed one names none.
	var data struct {
		RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(rpc.Data, &data)
	var kinds []string
	relayable := len(data.RequiredCapabilities) > 0
	for k := range data.RequiredCapabilities {
		switch k {
		case "elicitation":
			kinds = append(kinds, pipeline.InputElicitation)
		case "sampling":
			kinds = append(kinds, pipeline.InputSampling)
		case "roots":
			kinds = append(kinds, pipeline.InputRoots)
		default:
			relayable = false
		}
	}
	slices.Sort(kinds)
	unsupported := func(msg string) *pipeline.Error {
		return &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputUnsupported, Tool: t.name, Cause: err, Message: msg}
	}
	if !relayable {
		return unsupported(fmt.Sprintf("%s needs a client capability the gateway does not relay to its upstream", t))
	}
	if pe := m.inputForbidden(t, kinds); pe != nil {
		return pe
	}
	if r == nil {
		return unsupported(fmt.Sprintf("%s needs its caller's %s, which only an MCP caller on protocol revision 2026-07-28 (or later) can give through the gateway",
			t, strings.Join(kinds, " and ")))
	}
	var missing []string
	for _, k := range kinds {
		if !r.CanAnswer[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		// Declared by the caller, allowed, and still refused: the
		// upstream's fault, nothing the caller can change.
		return unsupported(fmt.Sprintf("%s: its upstream asks for client capabilities (%s) the gateway declared to it", t, strings.Join(kinds, ", ")))
	}
	pe := unsupported(fmt.Sprintf("%s needs its caller's %s (client capability %s), which this caller did not declare",
		t, strings.Join(missing, " and "), strings.Join(missing, ", ")))
	pe.Required = missing
	return pe
}

// inputForbidden refuses kinds the policy forbids t's upstream to ask for
// (nil: none).
func (m *MCPUpstream) inputForbidden(t inputTarget, kinds []string) *pipeline.Error {
	forbid := m.ts.cfg.InputForbidden
	if forbid == nil {
		return nil
	}
	f := forbid(t.url)
	for _, k := range kinds {
		if slices.Contains(f, k) {
			return &pipeline.Error{Code: pipeline.PermissionDenied, Reason: pipeline.ReasonInputForbidden, Tool: t.name,
				Message: fmt.Sprintf("%s asked its caller for %s, which the gateway's policy forbids for its upstream", t, k)}
		}
	}
	return nil
}

// inputKinds are the kinds an InputRequestMap asks for, sorted, each once.
func inputKinds(m mcp.InputRequestMap) ([]string, error) {
	var kinds []string
	for _, ir := range m {
		var k string
		switch ir.(type) {
		case *mcp.ElicitParams:
			k = pipeline.InputElicitation
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			k = pipeline.InputSampling
		case *mcp.ListRootsParams:
			k = pipeline.InputRoots
		default:
			return nil, fmt.Errorf("the upstream asks for input of type %T", ir)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds, nil
}

// Before 2026-07-28 an upstream asks for input with a request on the
// call's response stream (pipeline/inputrelay.go). Its session declares
// elicitation and sampling unless the policy forbids them for the upstream
// (inputDeclared: when the session is made; the policy is checked again
// per request, relayInput), and the call's requests are relayed to its
// caller through the face's InputRelay, within the bounds; a refusal is
// the upstream's JSON-RPC error, and the call goes on as the upstream
// decides.

// callerInput is what c's caller can be asked through the gateway, of the
// kinds an upstream session declares: on 2026-07-28 its round's declared
// kinds, before it what its face session declared (a relay that says), else
// nothing (gRPC, no face session). A 2026-07-28 upstream is told only that
// in the call's _meta (mcpupstream.WithCallerInput).
func callerInput(ctx context.Context, c *pipeline.Call) mcpupstream.InputKinds {
	if r := c.Input; r != nil {
		return mcpupstream.InputKinds{Elicitation: r.CanAnswer[pipeline.InputElicitation], Sampling: r.CanAnswer[pipeline.InputSampling]}
	}
	relay, ok := pipeline.InputRelayFrom(ctx).(interface{ Declares(kind string) bool })
	if !ok {
		return mcpupstream.InputKinds{}
	}
	return mcpupstream.InputKinds{Elicitation: relay.Declares(pipeline.InputElicitation), Sampling: relay.Declares(pipeline.InputSampling)}
}

// inputDeclared are the kinds a session to url declares it can answer.
func (m *MCPUpstream) inputDeclared(url string) mcpupstream.InputKinds {
	var forbidden []string
	if f := m.ts.cfg.InputForbidden; f != nil {
		forbidden = f(url)
	}
	return mcpupstream.InputKinds{Elicitation: !slices.Contains(forbidden, pipeline.InputElicitation),
		Sampling: !slices.Contains(forbidden, pipeline.InputSampling)}
}

// InputPolicyChanged ends the sessions that declare other kinds of input
// than the policy in force now allows (mcp_upstreams.input.forbid changed
// on reload): each is forgotten, so the next call to its upstream makes a
// session declaring what is allowed now — over stdio, a new process — and
// closed once its calls in flight are done. Until then, and for a call
// that took a session just before, the policy is enforced per request
// (relayInput). Call it after the new policy is in force.
func (m *MCPUpstream) InputPolicyChanged() {
	m.mu.Lock()
	sessions := maps.Clone(m.sessions)
	m.mu.Unlock()
	// Not under m.mu: s.mu is held while a session is being made.
	for k, s := range sessions {
		want := m.inputDeclared(k.url)
		s.mu.Lock()
		stale := s.cs != nil && s.declared != want
		s.mu.Unlock()
		if !stale {
			continue
		}
		m.mu.Lock()
		current := m.sessions[k] == s
		if current {
			delete(m.sessions, k)
		}
		m.mu.Unlock()
		if !current {
			continue
		}
		s.mu.Lock()
		s.retired = true
		m.closeIdle(s)
		s.mu.Unlock()
		if log := m.ts.cfg.Log; log != nil {
			log.Info("mcp upstream session ended: the policy changed what input it may relay", "upstream", k.url)
		}
	}
}

// relayInput answers the requests for input c's upstream makes on the
// call's stream: refused when the policy forbids the kind for up, when
// the caller cannot be asked (no relay), past the bounds on count and
// size; else asked of the caller, and the kind recorded for the audit
// line once the request reached it.
func (m *MCPUpstream) relayInput(c *pipeline.Call, up *registry.MCPTool) mcpupstream.InputFunc {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		kind := pipeline.InputKindOf(method)
		refuse := func(code int64, format string, a ...any) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, a...)}
		}
		if kind == "" {
			return refuse(jsonrpc.CodeMethodNotFound, "method not found")
		}
		if f := m.ts.cfg.InputForbidden; f != nil && slices.Contains(f(up.URL), kind) {
			return refuse(jsonrpc.CodeMethodNotFound, "%s: the gateway's policy forbids relaying %s from this upstream to its callers", method, kind)
		}
		relay := pipeline.InputRelayFrom(ctx)
		if relay == nil {
			return refuse(jsonrpc.CodeMethodNotFound, "%s: this call's caller cannot be asked for input through the gateway (only an MCP caller with a session that declared %s can)", method, kind)
		}
		if len(c.InputRelayed) >= pipeline.InputRelayMaxCalls {
			return refuse(jsonrpc.CodeInvalidRequest, "%s: the call already asked its caller for input %d times, the gateway's bound", method, pipeline.InputRelayMaxCalls)
		}
		if len(params) > pipeline.InputMaxRequestBytes {
			return refuse(jsonrpc.CodeInvalidParams, "%s: the request is %d bytes, over the gateway's bound of %d", method, len(params), pipeline.InputMaxRequestBytes)
		}
		answer, relayed, err := relay.Ask(ctx, method, params)
		if relayed {
			c.InputRelayed = append(c.InputRelayed, kind)
		}
		return answer, err
	}
}

// bridgeInput runs a 2026-07-28 upstream's rounds for a caller before
// 2026-07-28 that can be asked on its call's stream (an InputRelay): each
// round's requests are asked of the caller one by one, as
// elicitation/create, sampling/createMessage or roots/list requests, and
// the answers sent back with the upstream's state, until the upstream
// answers — within the bounds of rounds (InputMaxRounds) and of a round,
// after the policy. A request the caller cannot or does not answer ends
// the call (input-unsupported): a round has no way to say one request
// failed.
func (m *MCPUpstream) bridgeInput(ctx context.Context, c *pipeline.Call, up *registry.MCPTool, ts *registry.TransportSecurity, subject string,
	args json.RawMessage, onProgress func(mcpupstream.Progress), res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	relay := pipeline.InputRelayFrom(ctx)
	tooLarge := func(format string, a ...any) error {
		return &pipeline.Error{Code: pipeline.ResourceExhausted, Reason: pipeline.ReasonInputTooLarge, Tool: c.Tool,
			Message: fmt.Sprintf("tool %q ", c.Tool) + fmt.Sprintf(format, a...)}
	}
	for round := 1; res.InputRequests != nil; round++ {
		kinds, err := inputKinds(res.InputRequests)
		if err != nil {
			return nil, m.ts.failure(c, 0, "", err)
		}
		if perr := m.inputForbidden(toolTarget(c, up), kinds); perr != nil {
			return nil, perr
		}
		if round >= pipeline.InputMaxRounds {
			return nil, tooLarge("asked for input in %d rounds, the gateway's bound; it did not finish", pipeline.InputMaxRounds)
		}
		if len(res.InputRequests) > pipeline.InputMaxRequests || len(res.RequestState) > pipeline.InputMaxUpstreamState {
			return nil, tooLarge("asked for more input than the gateway relays (at most %d requests and a state of %d bytes)",
				pipeline.InputMaxRequests, pipeline.InputMaxUpstreamState)
		}
		responses := make(map[string]json.RawMessage, len(res.InputRequests))
		for _, key := range slices.Sorted(maps.Keys(res.InputRequests)) {
			ir := res.InputRequests[key]
			method, kind := inputMethod(ir)
			params, err := json.Marshal(ir)
			if err != nil {
				return nil, m.ts.failure(c, 0, "", fmt.Errorf("the upstream's input request does not encode: %w", err))
			}
			if len(params) > pipeline.InputMaxRequestBytes || len(c.InputRelayed) >= pipeline.InputRelayMaxCalls {
				return nil, tooLarge("asked for more input than the gateway relays (at most %d requests of %d bytes a call)",
					pipeline.InputRelayMaxCalls, pipeline.InputMaxRequestBytes)
			}
			answer, relayed, err := relay.Ask(ctx, method, params)
			if relayed {
				c.InputRelayed = append(c.InputRelayed, kind)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, &pipeline.Error{Code: pipeline.FailedPrecondition, Reason: pipeline.ReasonInputUnsupported, Tool: c.Tool,
					Message: fmt.Sprintf("tool %q asked its caller for %s, which it did not answer: %s", c.Tool, kind, policy.BoundTo(err.Error(), 256))}
			}
			responses[key] = answer
		}
		enc, err := json.Marshal(responses)
		if err != nil {
			return nil, err
		}
		if len(enc) > pipeline.InputMaxResponseBytes {
			return nil, tooLarge("was answered %d bytes, over the gateway's bound of %d", len(enc), pipeline.InputMaxResponseBytes)
		}
		s, _, caller, _, err := m.session(ctx, up, ts, subject)
		if err != nil {
			return nil, err
		}
		if caller == nil {
			m.release(s)
			return nil, fmt.Errorf("upstream %s: no HTTP session to send the round on", up.URL)
		}
		res, err = caller.CallToolRound(mcpupstream.WithInput(ctx, m.relayInput(c, up)), up.Tool, args,
			onProgress, &mcpupstream.Retry{Responses: enc, State: res.RequestState})
		m.release(s)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// inputMethod is the request method and kind an input request is asked as.
func inputMethod(ir mcp.InputRequest) (method, kind string) {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return pipeline.MethodElicit, pipeline.InputElicitation
	case *mcp.ListRootsParams:
		return pipeline.MethodListRoots, pipeline.InputRoots
	}
	return pipeline.MethodCreateMessage, pipeline.InputSampling
}
