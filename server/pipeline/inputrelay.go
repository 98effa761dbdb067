package pipeline

import (
	"context"
	"encoding/json"
	"time"
)

// Before MCP 2026-07-28 an upstream asks its caller for input by sending
// a request (elicitation/create, sampling/createMessage) on the call's
// response stream and waiting for the answer. The MCP face relays it to
// the caller on the caller's own response stream of the call and waits
// for the caller's answer (which arrives in a POST of its own, at any
// replica); InputRelay is that relay as the face gives it to the call's
// context, and a backend asks through it.

// Bounds on a relayed request: how long the gateway waits for the
// caller's answer, and how many requests one call may relay (the sizes
// are InputMaxRequestBytes and InputMaxResponseBytes).
const (
	InputRelayMaxWait  = 2 * time.Minute
	InputRelayMaxCalls = InputMaxRequests
)

// Methods of the requests an upstream relays to its caller.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	// MethodListRoots is asked only of a 2026-07-28 upstream's round
	// (an upstream before it is answered no roots by the gateway itself).
	MethodListRoots = "roots/list"
)

// InputKindOf is the kind of input a request method asks for, or "".
func InputKindOf(method string) string {
	switch method {
	case MethodElicit:
		return InputElicitation
	case MethodCreateMessage:
		return InputSampling
	case MethodListRoots:
		return InputRoots
	}
	return ""
}

// InputRelay relays an upstream's request for input to the call's caller.
type InputRelay interface {
	// Ask sends the request (method, params as JSON) to the caller and
	// waits for its answer: the result as JSON, or an error — a
	// *jsonrpc.Error (the caller's own, or the gateway's refusal: the
	// caller cannot answer this kind, the wait) to return to the upstream
	// as it is. relayed reports whether the request reached the caller.
	Ask(ctx context.Context, method string, params json.RawMessage) (answer json.RawMessage, relayed bool, err error)
}

type inputRelayKey struct{}

// WithInputRelay is ctx carrying the caller's relay.
func WithInputRelay(ctx context.Context, r InputRelay) context.Context {
	return context.WithValue(ctx, inputRelayKey{}, r)
}

// InputRelayFrom is the call's relay, or nil: its caller cannot be asked.
func InputRelayFrom(ctx context.Context) InputRelay {
	r, _ := ctx.Value(inputRelayKey{}).(InputRelay)
	return r
}
