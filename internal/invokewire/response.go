package invokewire

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// InvokeResponse's fields (backend.proto). InvokeToolResponse (gateway.proto)
// numbers result, is_error, content and meta the same and adds repairs (3)
// and replayed (4), so a backend's response bytes, with those appended,
// are the caller's response.
const (
	resultField   protowire.Number = 1
	isErrorField  protowire.Number = 2
	repairsField  protowire.Number = 3 // InvokeToolResponse
	replayedField protowire.Number = 4 // InvokeToolResponse
)

// IsPlainResponse reports whether b holds only InvokeResponse's result (1)
// and is_error (2), each at most once with its wire type: bytes a face may
// hand on as they are (nothing this gateway does not know at the top level).
func IsPlainResponse(b []byte) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || seen&(1<<(num&7)) != 0 {
			return false
		}
		switch {
		case num == resultField && typ == protowire.BytesType, num == isErrorField && typ == protowire.VarintType:
		default:
			return false
		}
		seen |= 1 << num
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// ResponseResult reads an InvokeResponse's result (a google.protobuf.Value)
// and is_error from its bytes, skipping its other fields (content, meta);
// false if the bytes do not decode. Equal to proto.Unmarshal for bytes with
// one result field, as every encoder writes them (a repeated result is
// merged by proto.Unmarshal, taken last-whole here).
func ResponseResult(b []byte) (v *structpb.Value, isError, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, false
		}
		b = b[n:]
		switch {
		case num == resultField && typ == protowire.BytesType:
			raw, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false, false
			}
			v = new(structpb.Value)
			if proto.Unmarshal(raw, v) != nil {
				return nil, false, false
			}
			b = b[m:]
		case num == isErrorField && typ == protowire.VarintType:
			x, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, false, false
			}
			isError, b = x != 0, b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return nil, false, false
			}
			b = b[m:]
		}
	}
	return v, isError, true
}

// EncodeResponse is InvokeResponse{result: v, is_error: isError} as
// proto.MarshalOptions{Deterministic: true} encodes it (never nil: an
// empty answer is zero bytes), the form a decoded answer is stored in.
// A result that does not encode (invalid UTF-8 in a string) is left out,
// as the stored answer always was.
func EncodeResponse(v *structpb.Value, isError bool) []byte {
	var b []byte
	if v != nil {
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
		if err == nil {
			b = protowire.AppendBytes(protowire.AppendTag(b, resultField, protowire.BytesType), raw)
		}
	}
	if isError {
		b = protowire.AppendVarint(protowire.AppendTag(b, isErrorField, protowire.VarintType), 1)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}
