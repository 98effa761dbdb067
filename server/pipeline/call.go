package pipeline

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/policy"
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
	// Message is the whole received message when it may head a backend
	// request as it is (invokewire.ToolRequest.IsBackendHead: only tool,
	// arguments and call_id); nil otherwise.
	Message []byte
	// Hold keeps Message's memory alive past the call; nil when the memory
	// is not pooled.
	Hold Holder
}

// Call is one tool call as it moves through the stages. A face builds it
// (NewCall, or Init on memory of its own); each stage reads and fills its
// part. A Call belongs to one goroutine. Its arguments are one value
// (Arguments) that the stages ask questions of.
type Call struct {
	Tool string
	// Bundle, when set, is the bundle the call was made through
	// (bundle.go): a tool outside it is not found.
	Bundle string
	CallID string
	// IdempotencyKey makes the call idempotent (idempotency.go); "" is none.
	IdempotencyKey string
	// AuditClient is the audit line's client (policy.AuditRecord.Client),
	// set only when the gateway itself makes the call for its caller
	// (policy.ClientConsole); "" for a call a face received.
	AuditClient string

	// Caller is the authenticated identity (set by the caller stage from
	// the face's authentication); HasCaller is false before that stage or
	// when authentication failed.
	Caller    policy.Caller
	HasCaller bool

	// Input is the call's multi round-trip round (input.go), set by a face
	// whose caller can answer an upstream's request for input; nil: the
	// caller cannot, and a backend refuses such a request.
	Input *InputRound
	// InputRelayed are the kinds of the requests for input the backend
	// relayed to the caller on the call's stream (inputrelay.go), in
	// order; set by the backend on the call's goroutine.
	InputRelayed []string

	// Entry is the tool's registry entry, set by the normalize stage; for
	// a call to an alias, its target's from the alias stage on.
	Entry *registry.Entry
	// Alias is the alias's entry when the call's Tool is an alias (set by
	// the alias stage, which made Entry the target's); nil otherwise.
	Alias *registry.Entry
	// Report is what normalization repaired or skipped.
	Report normalize.Report

	// args is the arguments in the forms they have taken (arguments.go).
	args Arguments

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
	// identityMode and identitySubject are the identity the backend was
	// sent (SetBackendIdentity), for the audit line.
	identityMode, identitySubject string
	// client and clientOf name the calling program (SetClient,
	// SetClientSource); read only by Client, off the clean path.
	client   string
	clientOf func(context.Context) string
}

// SetClient names the calling program as the face learned it (MCP's
// clientInfo.name, an HTTP User-Agent's product): caller-chosen text, so
// whoever keys anything by it bounds it (repair analytics do).
func (c *Call) SetClient(name string) { c.client = name }

// SetClientSource gives a face's way to learn the calling program's name
// from the call's context, asked only when something wants it (a gRPC
// face's user-agent, whose metadata read allocates): calls nobody asks
// about pay nothing.
func (c *Call) SetClientSource(f func(context.Context) string) { c.clientOf = f }

// Client names the calling program, "" when the face learned none.
func (c *Call) Client(ctx context.Context) string {
	if c.client == "" && c.clientOf != nil {
		return c.clientOf(ctx)
	}
	return c.client
}

// SetBackendIdentity records the identity mode the call's backend is
// reached under and the subject it names (never a token): the audit
// line's identity_mode and identity_subject.
func (c *Call) SetBackendIdentity(mode, subject string) {
	c.identityMode, c.identitySubject = mode, subject
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
	c.args.setStruct(args)
}

// Receive gives the call its arguments as received bytes (instead of
// decoded ones).
func (c *Call) Receive(r Received) { c.args.receive(r) }

// ReceiveJSON gives the call its arguments as the JSON text a model API
// returned (InvokeToolRequest.arguments_json, MCP's tools/call arguments):
// Args parses it with the strict parser within the call's argument limits,
// and a refusal names field (ArgumentsJSONField, MCPArgumentsField) and
// the JSON Pointer. alsoStruct says the face received decoded arguments
// too, which Args refuses.
func (c *Call) ReceiveJSON(field, text string, alsoStruct bool) {
	c.args.receiveJSON(field, text, alsoStruct)
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

// Args returns the arguments to forward, decoding the received bytes (or
// parsing the text) the first time it is asked. A refusal is an
// InvalidArgument *Error.
func (c *Call) Args() (*structpb.Struct, error) { return c.args.Struct(c.Tool, c.pol) }

// Forwardable returns the received bytes when they are exactly what the
// backend must receive (Arguments.WireForBackend).
func (c *Call) Forwardable() (Received, bool) { return c.args.WireForBackend() }

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

// maxStages bounds the stage list (stages.go has 10): the per-stage times
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

// AliasTarget is the tool an alias call went to; "" for a call that is not
// through an alias (or was refused before the alias stage).
func (c *Call) AliasTarget() string {
	if c.Alias == nil || c.Entry == nil {
		return ""
	}
	return c.Entry.Tool.Name
}

// BackendTool is the tool name the backend is sent: the entry's (an
// alias's target, a tool called by its exported name) once the tool is
// looked up, else the name called.
func (c *Call) BackendTool() string {
	if c.Entry != nil {
		return c.Entry.Tool.Name
	}
	return c.Tool
}
