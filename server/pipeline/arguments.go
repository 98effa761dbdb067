package pipeline

import (
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/internal/structwire"
)

// Arguments is a call's arguments in every form they take on the way
// through the stages, and the questions the stages ask of them. A face
// gives them as received bytes (Call.Receive), JSON text
// (Call.ReceiveJSON) or decoded (Call.Init); the stages decode bytes or
// parse text at most once, and only when one needs the decoded form; a
// repair made on the wire replaces the bytes with the repaired ones (and
// a backend request built around them), keeping the bytes as sent for the
// audit line; a repair made on the decoded form replaces that.
type Arguments struct {
	origin argsOrigin
	// wire is the arguments' bytes (origin fromWire): as received, or once
	// repaired on the wire (asSent set), the repaired ones.
	wire Received
	// asSent is the received bytes when wire holds their repair.
	asSent []byte
	// text is the JSON text (origin fromJSON); textField names it in
	// refusals; alsoStruct: the face received decoded arguments too.
	text, textField string
	alsoStruct      bool
	sent            *structpb.Struct // as sent, once decoded
	fwd             *structpb.Struct // to forward (normalized), once decoded
	// err is the decode or parse refusal, kept for every later ask.
	err *Error
	// rewrite: the received bytes hold more than their decoded form
	// (unknown fields, repeated kinds or entry fields), or the decoded
	// form was changed past a wire repair: the backend gets the decoded
	// form encoded, never the bytes.
	rewrite bool
	// general: the pipeline's fast paths are off, so the arguments are
	// decoded and re-encoded, never checked or forwarded as bytes. Set
	// with decodes by the pipeline (Call.Begin).
	general bool
	decodes *atomic.Int64 // the pipeline's decode count; nil before Begin
}

// argsOrigin is the form a face gave the arguments in.
type argsOrigin uint8

const (
	fromStruct argsOrigin = iota // decoded (or none)
	fromWire                     // google.protobuf.Struct bytes
	fromJSON                     // JSON text
)

func (a *Arguments) setStruct(s *structpb.Struct) { a.sent, a.fwd = s, s }

func (a *Arguments) receive(r Received) {
	a.origin, a.wire = fromWire, r
	a.sent, a.fwd = nil, nil
}

func (a *Arguments) receiveJSON(field, text string, alsoStruct bool) {
	a.origin, a.text, a.textField, a.alsoStruct = fromJSON, text, field, alsoStruct
	a.sent, a.fwd = nil, nil
}

// attach ties the arguments to the pipeline running the call.
func (a *Arguments) attach(p *Pipeline) { a.general, a.decodes = !p.fast, &p.stats.decoded }

// Undecoded returns the bytes while the arguments are still only bytes
// (received, or repaired on the wire): a stage that can work on them does,
// and the arguments stay undecoded.
func (a *Arguments) Undecoded() ([]byte, bool) {
	if a.origin != fromWire || a.fwd != nil {
		return nil, false
	}
	return a.wire.Args, true
}

// WireChecked returns the undecoded bytes when the fast paths are on: the
// bytes the wire repair, the wire validator and the rules' member reader
// take instead of the decoded form.
func (a *Arguments) WireChecked() ([]byte, bool) {
	if a.general {
		return nil, false
	}
	return a.Undecoded()
}

// Repaired reports whether normalization repaired the bytes on the wire.
func (a *Arguments) Repaired() bool { return a.asSent != nil }

// RepairedWire returns the bytes a wire repair made while they are
// undecoded: bytes this gateway encoded, so canonical.
func (a *Arguments) RepairedWire() ([]byte, bool) {
	if !a.Repaired() {
		return nil, false
	}
	return a.Undecoded()
}

// Rescreen reports whether the arguments to forward may differ from what
// screen checked (the bytes as received): repaired, changed, re-encoded,
// or never bytes at all.
func (a *Arguments) Rescreen() bool {
	_, asReceived := a.WireForBackend()
	return a.Repaired() || !asReceived
}

// WireForBackend returns the received bytes (and the received message
// around them) when they are exactly what the backend must get: never
// decoded, or decoded and left unchanged, or repaired on the wire (then
// decoding only read the repaired bytes). With the fast paths off it
// reports false: the backend encodes the decoded form.
func (a *Arguments) WireForBackend() (Received, bool) {
	changed := a.fwd != nil && a.fwd != a.sent && a.asSent == nil
	if a.origin != fromWire || a.rewrite || changed || a.general {
		return Received{}, false
	}
	return a.wire, true
}

// repairedOnWire makes a wire repair the arguments: buf holds the repaired
// bytes from headLen on, after the head invokewire.BeginRequest wrote.
func (a *Arguments) repairedOnWire(buf []byte, headLen int, callID string) {
	a.asSent = a.wire.Args
	msg, args := invokewire.FinishRequest(buf, headLen, callID)
	a.wire = Received{Args: args, Message: msg}
}

// normalized sets the arguments to forward: normalization's result, which
// is the decoded form itself when nothing changed.
func (a *Arguments) normalized(s *structpb.Struct) { a.fwd = s }

// replaced sets arguments to forward that differ from every form held: the
// bytes (also when repaired on the wire) are no longer what the backend
// must get.
func (a *Arguments) replaced(s *structpb.Struct) { a.fwd, a.rewrite = s, true }

// reencoded marks bytes that hold more than their decoded form: they are
// never forwarded as they came.
func (a *Arguments) reencoded() { a.rewrite = true }

// detached is the arguments for a run that may outlive the call: the
// received bytes belong to the face's call, so only the decoded forms go.
func (a Arguments) detached() Arguments {
	a.origin, a.wire = fromStruct, Received{}
	return a
}

// Struct returns the arguments to forward, decoding the bytes or parsing
// the text the first time it is asked. A refusal is an InvalidArgument
// *Error naming tool, and is kept.
func (a *Arguments) Struct(tool string, pol *Policy) (*structpb.Struct, error) {
	if a.err != nil {
		return nil, a.err
	}
	if a.origin == fromJSON && a.fwd == nil {
		return a.parseJSON(tool, pol)
	}
	if a.fwd != nil || a.origin != fromWire {
		return a.fwd, nil
	}
	s, err := a.decode(a.wire.Args)
	if err != nil {
		a.err = &Error{Code: InvalidArgument, Reason: ReasonArgumentsUndecodable, Tool: tool,
			Message: "arguments are not a valid google.protobuf.Struct", Cause: err}
		return nil, a.err
	}
	a.countDecode()
	a.fwd = s
	if a.asSent == nil {
		a.sent = s
	}
	return s, nil
}

func (a *Arguments) countDecode() {
	if a.decodes != nil {
		a.decodes.Add(1)
	}
}

// decode decodes bytes: by hand (structwire's decoder, equal to
// proto.Unmarshal for the bytes it takes, several times faster) unless the
// fast paths are off or it leaves the bytes to proto.Unmarshal. Unknown
// fields are dropped: what goes on is only what was checked.
func (a *Arguments) decode(b []byte) (*structpb.Struct, error) {
	if !a.general {
		if s, ok := structwire.DecodeStruct(b); ok {
			return s, nil
		}
	}
	s := new(structpb.Struct)
	return s, proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, s)
}

// Sent returns the arguments as the model sent them, decoding them if
// needed; nil if they cannot be decoded.
func (a *Arguments) Sent(tool string, pol *Policy) *structpb.Struct {
	if a.sent == nil && a.asSent != nil {
		// Bytes the screen stage read as canonical, so they decode.
		if s, err := a.decode(a.asSent); err == nil {
			a.sent = s
		}
	}
	if a.sent == nil {
		a.Struct(tool, pol)
	}
	return a.sent
}

// forAuditWire is what the audit line encodes from bytes while the
// arguments are undecoded: the bytes as sent, and the repaired ones when
// repaired on the wire (else nil).
func (a *Arguments) forAuditWire() (sent, repaired []byte, ok bool) {
	b, ok := a.Undecoded()
	if !ok {
		return nil, nil, false
	}
	if a.Repaired() {
		return a.asSent, b, true
	}
	return b, nil, true
}

// forAudit is what the audit line encodes from the decoded forms: the
// arguments as sent, and as forwarded when they differ (else nil).
func (a *Arguments) forAudit(tool string, pol *Policy) (sent, repaired *structpb.Struct) {
	sent = a.Sent(tool, pol)
	repaired = a.fwd
	if a.Repaired() && repaired == nil {
		repaired, _ = a.Struct(tool, pol) // repaired on the wire, not yet decoded
	}
	if repaired == sent {
		repaired = nil
	}
	return sent, repaired
}
