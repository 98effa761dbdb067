package invokewire

import (
	"errors"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// InvokeToolRequest's fields (gateway.proto); InvokeRequest (backend.proto)
// numbers tool, arguments and call_id the same, and its field 4 is caller.
const (
	toolField           protowire.Number = 1
	argumentsField      protowire.Number = 2
	callIDField         protowire.Number = 3
	idempotencyKeyField protowire.Number = 4 // InvokeToolRequest
	callerField         protowire.Number = 4 // InvokeRequest
	// InvokeToolRequest.arguments_json (5) is never scanned: JSON text is
	// parsed by the pipeline, so such a request is decoded whole.
)

// ToolRequest is what ScanToolRequest reads of an InvokeToolRequest.
type ToolRequest struct {
	Tool, CallID, IdempotencyKey string
	// Args is the arguments' google.protobuf.Struct bytes, within the
	// scanned message.
	Args            []byte
	HasArgs, HasKey bool
}

// IsBackendHead reports whether the scanned message, as it came, may head a
// backend InvokeRequest (the caller field appended after it): only tool,
// arguments and call_id, which the two messages share. An idempotency key
// is InvokeToolRequest's field 4, InvokeRequest's caller.
func (r ToolRequest) IsBackendHead() bool { return !r.HasKey }

// ScanToolRequest reads an InvokeToolRequest's envelope without decoding
// the arguments. It reports false for anything but fields 1–4, each at
// most once, length-delimited, strings valid UTF-8 — and for
// arguments_json (field 5): such a request takes the decode path.
func ScanToolRequest(b []byte) (r ToolRequest, ok bool) {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < toolField || num > idempotencyKeyField || seen&(1<<num) != 0 {
			// Field 5 (arguments_json) lands here too, by design.
			return r, false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return r, false
		}
		b = b[n+m:]
		switch num {
		case toolField:
			if !utf8.Valid(v) {
				return r, false
			}
			r.Tool = string(v)
		case argumentsField:
			r.Args, r.HasArgs = v, true
		case callIDField:
			if !utf8.Valid(v) {
				return r, false
			}
			r.CallID = string(v)
		case idempotencyKeyField:
			if !utf8.Valid(v) {
				return r, false
			}
			r.IdempotencyKey, r.HasKey = string(v), true
		}
	}
	return r, true
}

// A backend InvokeRequest whose arguments a wire repair writes is built in
// one buffer: BeginRequest writes the tool and the arguments' tag with room
// for the longest length varint, the caller appends the arguments, and
// FinishRequest writes their length, closes the gap and appends call_id —
// proto.Marshal's layout, one allocation, no second copy of the arguments.
const maxArgsLenVarint = 5 // a length under 4 GiB

// BeginRequest starts an InvokeRequest whose arguments will be about
// argsSize bytes; they go from len(head) on.
func BeginRequest(tool string, argsSize int, callID string) (head []byte) {
	n := protowire.SizeTag(toolField) + protowire.SizeBytes(len(tool)) + protowire.SizeTag(argumentsField) + maxArgsLenVarint +
		argsSize + argsSize/4 + 64 + protowire.SizeTag(callIDField) + protowire.SizeBytes(len(callID))
	head = make([]byte, 0, n)
	if tool != "" {
		head = protowire.AppendString(protowire.AppendTag(head, toolField, protowire.BytesType), tool)
	}
	head = protowire.AppendTag(head, argumentsField, protowire.BytesType)
	return append(head, make([]byte, maxArgsLenVarint)...)
}

// FinishRequest completes what BeginRequest started (headLen is its
// length; buf is the head with the arguments appended): msg is the
// request, args the arguments within it (full: appending copies).
func FinishRequest(buf []byte, headLen int, callID string) (msg, args []byte) {
	at := headLen - maxArgsLenVarint
	argsLen := len(buf) - headLen
	n := len(protowire.AppendVarint(buf[at:at], uint64(argsLen)))
	copy(buf[at+n:], buf[headLen:])
	buf = buf[:at+n+argsLen]
	args = buf[at+n : len(buf) : len(buf)]
	if callID != "" {
		buf = protowire.AppendString(protowire.AppendTag(buf, callIDField, protowire.BytesType), callID)
	}
	return buf, args
}

// Caller's fields (tool.proto).
const (
	callerSubjectField protowire.Number = 1
	callerMethodField  protowire.Number = 2
	callerRolesField   protowire.Number = 3
)

// CallerField encodes InvokeRequest.caller (field 4) on its own, to follow
// a received request's bytes (fields 1–3) on the wire, as proto.Marshal
// would: subject and method unless empty (proto3), every role. The
// reflective marshaller took ~2.5 µs a call for these three fields.
func CallerField(subject, method string, roles []string) ([]byte, error) {
	size, valid := 0, true
	eachCallerField(subject, method, roles, func(_ protowire.Number, s string) {
		size += 1 + protowire.SizeBytes(len(s)) // tags 1–3 take one byte
		valid = valid && utf8.ValidString(s)
	})
	if !valid { // proto3 strings must be valid UTF-8; proto.Marshal refuses them too
		return nil, errors.New("caller identity is not valid UTF-8")
	}
	out := make([]byte, 0, 1+protowire.SizeVarint(uint64(size))+size)
	out = protowire.AppendTag(out, callerField, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(size))
	eachCallerField(subject, method, roles, func(num protowire.Number, s string) {
		out = protowire.AppendString(protowire.AppendTag(out, num, protowire.BytesType), s)
	})
	return out, nil
}

// eachCallerField calls f for each Caller field proto.Marshal writes, in
// field order.
func eachCallerField(subject, method string, roles []string, f func(num protowire.Number, s string)) {
	if subject != "" {
		f(callerSubjectField, subject)
	}
	if method != "" {
		f(callerMethodField, method)
	}
	for _, r := range roles {
		f(callerRolesField, r)
	}
}
