package pipeline

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/structwire"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
)

// Holder keeps received memory alive for a send that may outlive the call
// (gRPC's pooled receive buffers have exactly these two methods).
type Holder interface {
	Ref()
	Free()
}

// Received is a call's arguments as a face received them, not decoded.
type Received struct {
	// Args is the arguments' google.protobuf.Struct wire bytes.
	Args []byte
	// Message is the whole received message when its only fields are tool
	// (1), arguments (2) and call_id (3), which a backend request of the
	// same shape can carry unchanged; nil otherwise.
	Message []byte
	// Hold keeps Message's memory alive past the call; nil when the memory
	// is not pooled.
	Hold Holder
}

// Call is one tool call as it moves through the stages. A face builds it
// (NewCall, or Init on memory of its own); each stage reads and fills its
// part. A Call belongs to one goroutine.
//
// The arguments are held as received bytes, decoded, or both: Args decodes
// the received bytes at most once, and a stage that can work on the bytes
// never asks. Forwardable reports whether the received bytes are still
// exactly what the backend must get. A repair made on the wire replaces the
// received bytes with the repaired ones (and a request built around them),
// keeping the bytes as sent for the audit line (SentWire).
type Call struct {
	Tool   string
	CallID string
	// IdempotencyKey makes the call idempotent (idempotency.go); "" is none.
	IdempotencyKey string

	// Caller is the authenticated identity (set by the caller stage from
	// the face's authentication); HasCaller is false before that stage or
	// when authentication failed.
	Caller    policy.Caller
	HasCaller bool

	// Entry is the tool's registry entry, set by the normalize stage.
	Entry *registry.Entry
	// Report is what normalization repaired or skipped.
	Report normalize.Report

	received    Received
	hasReceived bool
	// argsJSON is the arguments as JSON text (gRPC's arguments_json, MCP's
	// tools/call arguments), parsed by Args; jsonField names it in
	// refusals; argsBoth: the face also received a Struct.
	argsJSON, jsonField string
	hasJSON, argsBoth   bool
	sent                *structpb.Struct // the arguments as sent, once decoded
	args                *structpb.Struct // the arguments to forward (normalized)
	// sentWire is the arguments' bytes as sent when normalization repaired
	// them on the wire (receiveRepaired): received then holds the repaired
	// arguments, and sent decodes from these bytes.
	sentWire  []byte
	decodeErr *Error
	// rewrite: the received bytes hold more than their decoded form
	// (unknown fields, repeated kinds or entry fields), so they are never
	// forwarded as they came: the backend gets the decoded form re-encoded.
	rewrite bool

	start       time.Time
	validation  string                   // "ok" | "failed" | "" (not reached)
	backend     string                   // the backend's status code name, if called
	backendTime time.Duration            // how long the backend call took, if called
	stageTime   [maxStages]time.Duration // how long each stage took (0: not run)
	err         *Error                   // the error a stage or dispatch ended the call with
	p           *Pipeline
	pol         *Policy // the policy snapshot the call runs under (Begin)
	// shadow is what shadow-mode entries would have refused (the call
	// proceeded); nil on every call while the policy has none.
	shadow []*policy.Error
	// keyConflict: the face received two different idempotency keys.
	keyConflict bool
	// replayed: the result is an earlier call's stored outcome.
	replayed bool
	// outputInvalid: the result failed the tool's output schema.
	outputInvalid bool
}

// ShadowDenials are the refusals shadow-mode rules and authz entries would
// have made on this call (it proceeded past them), in stage order.
func (c *Call) ShadowDenials() []*policy.Error { return c.shadow }

// NewCall is a call whose arguments are already decoded (nil means none).
func NewCall(tool, callID string, args *structpb.Struct) *Call {
	c := new(Call)
	c.Init(tool, callID, args)
	return c
}

// Init sets up c in place, for a face that allocates the call together
// with its other per-call state.
func (c *Call) Init(tool, callID string, args *structpb.Struct) {
	c.Tool, c.CallID = tool, callID
	c.sent, c.args = args, args
}

// Receive gives the call its arguments as received bytes (instead of
// decoded ones).
func (c *Call) Receive(r Received) {
	c.received, c.hasReceived = r, true
	c.sent, c.args = nil, nil
}

// ReceiveJSON gives the call its arguments as the JSON text a model API
// returned (InvokeToolRequest.arguments_json, MCP's tools/call arguments):
// Args parses it with the strict parser within the call's argument limits,
// and a refusal names field (ArgumentsJSONField, MCPArgumentsField) and
// the JSON Pointer. alsoStruct says the face received decoded arguments
// too, which Args refuses.
func (c *Call) ReceiveJSON(field, text string, alsoStruct bool) {
	c.argsJSON, c.jsonField, c.hasJSON, c.argsBoth = text, field, true, alsoStruct
	c.sent, c.args = nil, nil
}

// SetIdempotencyKey sets the call's idempotency key from the places a
// face reads it (a field, a header): "" means not given; two different
// keys are refused by the identifiers stage.
func (c *Call) SetIdempotencyKey(keys ...string) {
	for _, k := range keys {
		switch {
		case k == "":
		case c.IdempotencyKey == "":
			c.IdempotencyKey = k
		case k != c.IdempotencyKey:
			c.keyConflict = true
		}
	}
}

// Replayed reports whether the call's result is an earlier call's stored
// outcome (the backend was not called).
func (c *Call) Replayed() bool { return c.replayed }

// Decoded reports whether the arguments exist in decoded form.
func (c *Call) Decoded() bool { return c.args != nil || !c.hasReceived }

// ReceivedArgs returns the received argument bytes, if the call has them.
func (c *Call) ReceivedArgs() ([]byte, bool) { return c.received.Args, c.hasReceived }

// Args returns the arguments to forward, decoding the received bytes the
// first time it is asked. A decode failure is an InvalidArgument *Error.
func (c *Call) Args() (*structpb.Struct, error) {
	if c.decodeErr != nil {
		return nil, c.decodeErr
	}
	if c.hasJSON && c.args == nil {
		return c.parseJSON()
	}
	if c.args != nil || !c.hasReceived {
		return c.args, nil
	}
	s, err := c.decode()
	if err != nil {
		c.decodeErr = &Error{Code: InvalidArgument, Reason: ReasonArgumentsUndecodable, Tool: c.Tool,
			Message: "arguments are not a valid google.protobuf.Struct", Cause: err}
		return nil, c.decodeErr
	}
	if c.p != nil {
		c.p.stats.decoded.Add(1)
	}
	c.args = s
	if c.sentWire == nil {
		c.sent = s
	}
	return s, nil
}

// decode decodes the received arguments: by hand (structwire's decoder,
// equal to proto.Unmarshal for the bytes it takes, several times faster)
// unless the fast paths are off or it leaves the bytes to proto.Unmarshal.
// Unknown fields are dropped: what goes on is only what was checked.
func (c *Call) decode() (*structpb.Struct, error) { return c.decodeBytes(c.received.Args) }

func (c *Call) decodeBytes(b []byte) (*structpb.Struct, error) {
	if c.p == nil || c.p.fast {
		if s, ok := structwire.DecodeStruct(b); ok {
			return s, nil
		}
	}
	s := new(structpb.Struct)
	return s, proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, s)
}

// Sent returns the arguments as the model sent them, decoding them if
// needed; nil if they cannot be decoded.
func (c *Call) Sent() *structpb.Struct {
	if c.sent == nil && c.sentWire != nil {
		// Bytes the screen stage read as canonical, so they decode.
		if s, err := c.decodeBytes(c.sentWire); err == nil {
			c.sent = s
		}
	}
	if c.sent == nil {
		c.Args()
	}
	return c.sent
}

// SentWire returns the arguments' bytes as sent when normalization
// repaired them on the wire (ReceivedArgs then returns the repaired bytes).
func (c *Call) SentWire() ([]byte, bool) { return c.sentWire, c.sentWire != nil }

// receiveRepaired makes the wire-repaired arguments the call's received
// arguments: buf holds them from headLen on, after the head
// invokewire.BeginRequest wrote. The bytes as sent stay for the audit line.
func (c *Call) receiveRepaired(buf []byte, headLen int) {
	c.sentWire = c.received.Args
	msg, args := invokewire.FinishRequest(buf, headLen, c.CallID)
	c.received = Received{Args: args, Message: msg}
}

// SetArgs replaces the arguments to forward (normalization's result).
func (c *Call) SetArgs(s *structpb.Struct) { c.args = s }

// setChangedArgs replaces the arguments to forward with s, which differ
// from every form the call holds: the received bytes (also when they were
// repaired on the wire) are no longer what the backend must get.
func (c *Call) setChangedArgs(s *structpb.Struct) {
	c.args, c.rewrite = s, true
}

// Forwardable returns the received bytes when they are exactly what the
// backend must receive: never decoded, or decoded and left unchanged, or
// repaired on the wire (then decoding is only a read of the repaired
// bytes). With the pipeline's fast paths off it reports false: the backend
// re-encodes.
func (c *Call) Forwardable() (Received, bool) {
	changed := c.args != nil && c.args != c.sent && c.sentWire == nil
	if !c.hasReceived || c.rewrite || changed || (c.p != nil && !c.p.fast) {
		return Received{}, false
	}
	return c.received, true
}

// ArgSize is the arguments' encoded size: the received bytes' length, or
// the decoded arguments' proto.Size.
func (c *Call) ArgSize() int {
	if c.args == nil && c.hasReceived {
		return len(c.received.Args)
	}
	return proto.Size(c.args)
}

// Fail classifies err and records it as the call's outcome, for a face
// whose own step (authentication) refused the call. It returns the *Error.
func (c *Call) Fail(err error) *Error {
	e := Classify(err)
	if e.Kind == KindValidation && len(e.Repairs) == 0 {
		e.Repairs = c.Report.Repairs
	}
	c.err = e
	return e
}

// Failure is the error the call ended with, if any.
func (c *Call) Failure() *Error { return c.err }

type callKey struct{}

// WithCall stores c in ctx, for faces whose stages run as separate
// interceptors.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call WithCall stored, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// addShadow records what a shadow-mode entry would have refused.
func (c *Call) addShadow(err error) {
	var pe *policy.Error
	if errors.As(err, &pe) {
		c.shadow = append(c.shadow, pe)
	}
}

// maxStages bounds the stage list (stages.go has 9): the per-stage times
// live in the Call, not in an allocation.
const maxStages = 16

// StageTimes is how long each stage took, by stage index (0: not run).
func (c *Call) StageTimes() []time.Duration {
	n := len(c.stageTime)
	if c.p != nil {
		n = min(n, len(c.p.stages))
	}
	return c.stageTime[:n]
}
