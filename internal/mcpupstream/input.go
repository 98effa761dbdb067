package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream before MCP 2026-07-28 asks for its caller's input with a
// request (elicitation/create, sampling/createMessage) on the response
// stream of the call that needs it. A Caller reads that stream itself, so
// it knows which call a request belongs to: the call's context carries
// what answers it (WithInput), and the answer is posted back on the
// session. The session declares the kinds it may relay
// (ConnectOptions.Input) at initialize; a request of a declared kind that
// arrives elsewhere (the standalone stream, which no call owns) reaches
// the SDK's handlers, which refuse it. Over stdio and legacy SSE, whose one
// stream names no call, see attribution.go.

// InputFunc answers an upstream's request for input (method, params as
// JSON) made on a call's stream: the result as JSON, or an error — a
// *jsonrpc.Error is answered as it is, ErrAnswerLater not at all (the
// answer is posted later, AnswerRequest), any other as an internal
// error. ctx carries the request's id (RequestID).
type InputFunc func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// ErrAnswerLater is an InputFunc's word that the request is answered
// later, by AnswerRequest (from any replica: an upstream takes the answer
// to its request by id in its session, whichever POST carries it), so the
// stream is read on meanwhile: a task's requests for input arrive on the
// stream of tasks/result, several at once.
var ErrAnswerLater = errors.New("the request for input is answered later")

type requestIDKey struct{}

// RequestID is the JSON id of the upstream's request an InputFunc is
// asked to answer (nil outside one).
func RequestID(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(requestIDKey{}).(json.RawMessage)
	return id
}

// maxRequestIDBytes bounds an upstream request's id the gateway keeps to
// answer later.
const maxRequestIDBytes = 256

type inputKey struct{}

// WithInput is ctx whose call's requests for input f answers.
func WithInput(ctx context.Context, f InputFunc) context.Context {
	return context.WithValue(ctx, inputKey{}, f)
}

func inputFrom(ctx context.Context) InputFunc {
	f, _ := ctx.Value(inputKey{}).(InputFunc)
	return f
}

type callerInputKey struct{}

// WithCallerInput is ctx whose call's caller can answer k: on a session
// speaking 2026-07-28 the call's per-request _meta declares, of what the
// session declared, only that (Caller.metaFor), so an upstream does not
// ask a caller the gateway cannot relay to.
func WithCallerInput(ctx context.Context, k InputKinds) context.Context {
	return context.WithValue(ctx, callerInputKey{}, &allKinds[kindsIndex(k)]) // a pointer: no allocation to box it
}

// allKinds are the InputKinds by kindsIndex.
var allKinds = [4]InputKinds{{}, {Elicitation: true}, {Sampling: true}, {Elicitation: true, Sampling: true}}

func callerInputFrom(ctx context.Context) (InputKinds, bool) {
	k, ok := ctx.Value(callerInputKey{}).(*InputKinds)
	if !ok {
		return InputKinds{}, false
	}
	return *k, true
}

// InputKinds are what a session declares it can answer at initialize.
type InputKinds struct {
	Elicitation, Sampling bool
}

// errOutsideCall is the answer to a request for input that no call's
// stream carried: nobody is there to ask.
var errOutsideCall = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
	Message: "the gateway relays requests for input only on the response stream of the call that needs it"}

// withInputHandlers is o's client options declaring k: handlers that
// refuse (errOutsideCall), since the calls' own requests never reach them.
func withInputHandlers(o *mcp.ClientOptions, k InputKinds) *mcp.ClientOptions {
	var c mcp.ClientOptions
	if o != nil {
		c = *o
	}
	if k.Elicitation {
		c.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errOutsideCall }
	}
	if k.Sampling {
		//lint:ignore SA1019 sampling is deprecated by SEP-2577 (2026-07-28) yet still asked for by upstreams on the revisions before it
		c.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errOutsideCall
		}
	}
	return &c
}

// answerInput is the answer's member ("result":… or "error":…) to the
// request m for input, asked through the call's InputFunc (none: refused);
// nil when the InputFunc answers it later.
func answerInput(ctx context.Context, m *message) []byte {
	f := inputFrom(ctx)
	if f == nil {
		return rpcErrorMember(&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"})
	}
	res, err := f(context.WithValue(ctx, requestIDKey{}, json.RawMessage(m.rawID)), m.Method, m.Params)
	if errors.Is(err, ErrAnswerLater) && len(m.rawID) <= maxRequestIDBytes {
		return nil
	}
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway could not relay the request"}
		}
		return rpcErrorMember(rpc)
	}
	b := append([]byte(`"result":`), res...)
	return b
}

// answerOnSide is AnswerRequest on a stdio or legacy SSE session: the
// answer written on its one connection, beside the SDK (side.go).
func (c *Caller) answerOnSide(ctx context.Context, sid string, id, result json.RawMessage, rpcErr *jsonrpc.Error) error {
	if !c.sideTasks() {
		return ErrTasksUnsupported
	}
	if sid != c.sessionKey() {
		return fmt.Errorf("the answer to a request for input: the task's session has ended: %w", mcp.ErrSessionMissing)
	}
	var raw any
	if err := json.Unmarshal(id, &raw); err != nil {
		return errors.New("not a request id")
	}
	jid, err := jsonrpc.MakeID(raw)
	if err != nil || !jid.IsValid() {
		return errors.New("not a request id")
	}
	resp := &jsonrpc.Response{ID: jid, Result: result}
	if rpcErr != nil {
		resp.Result, resp.Error = nil, rpcErr
	} else if !json.Valid(result) {
		return errors.New("the answer is not JSON")
	}
	return c.side.Connection.Write(ctx, resp)
}

func rpcErrorMember(e *jsonrpc.Error) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		data = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	return append([]byte(`"error":`), data...)
}

// AnswerRequest posts the answer to the upstream's request id (its JSON
// text, RequestID) in session sid: result, or rpcErr when not nil. The
// request was read earlier, on any replica (ErrAnswerLater).
func (c *Caller) AnswerRequest(ctx context.Context, sid string, id, result json.RawMessage, rpcErr *jsonrpc.Error) error {
	if len(id) == 0 || len(id) > maxRequestIDBytes || !json.Valid(id) || id[0] == '{' || id[0] == '[' {
		return errors.New("not a request id")
	}
	if c.sdk {
		return c.answerOnSide(ctx, sid, id, result, rpcErr)
	}
	member := append([]byte(`"result":`), result...)
	if rpcErr != nil {
		member = rpcErrorMember(rpcErr)
	} else if !json.Valid(result) {
		return errors.New("the answer is not JSON")
	}
	msg := append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), ','), member...)
	return c.post(ctx, sid, "the answer to a request for input", append(msg, '}'))
}
