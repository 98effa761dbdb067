package rawcodec

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec used for every other message
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Request is a message kept as received (server side).
type Request struct {
	Buf []byte // the whole message; never modified
	// Held is gRPC's buffer behind Buf when it came in one piece:
	// referenced (not copied) until Release, after which Buf must not be read.
	Held mem.Buffer
}

// Release returns the received buffer to gRPC's pool (once the handler is
// done; a backend send still in flight holds its own reference).
func (r *Request) Release() {
	if r.Held != nil {
		r.Held.Free()
		r.Held = nil
	}
}

// Forward is a message made of a received message's bytes followed by
// more encoded fields (client side), sent as two buffers so the received
// bytes are not copied.
type Forward struct {
	Head []byte
	// Held, when set, is the pooled buffer behind Head: the send takes a
	// reference of its own.
	Held mem.Buffer
	Tail []byte
}

// Response is a message already encoded (server side).
type Response struct{ Buf []byte }

// Frame is an undecoded received message (client side).
type Frame struct{ Buf []byte }

// Checked is a message to decode whose decode failure the handler reports
// itself (server side): gRPC turns a codec error into Internal and writes
// that status before the handler can say otherwise, but a request that
// does not decode is the caller's error. Unmarshal decodes into Msg and
// leaves a failure in Err instead of returning it.
type Checked struct {
	Msg proto.Message
	Err error
}

// ProtoReflect is Msg's, so a server without this codec (a gateway
// assembled by hand) decodes a Checked like the message itself.
func (c *Checked) ProtoReflect() protoreflect.Message { return c.Msg.ProtoReflect() }

// Codec moves the types above as bytes.
type Codec struct{}

var protoCodec = encoding.GetCodecV2("proto")

// Name is "proto": peers see the usual content type.
func (Codec) Name() string { return "proto" }

// Marshal's result belongs to gRPC, which frees it once sent: a held
// buffer gets a reference of its own.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Response:
		return mem.BufferSlice{mem.SliceBuffer(m.Buf)}, nil
	case *Forward:
		var head mem.Buffer = mem.SliceBuffer(m.Head)
		if h := m.Held; h != nil {
			h.Ref()
			head = h
		}
		if len(m.Tail) == 0 {
			return mem.BufferSlice{head}, nil
		}
		return mem.BufferSlice{head, mem.SliceBuffer(m.Tail)}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal keeps what gRPC received rather than copying it where it can.
// gRPC frees data's buffers when Unmarshal returns, so a Request takes a
// reference (released by its handler); a Frame keeps an unpooled buffer as
// is (nothing recycles it) and copies a pooled or split one.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *Request:
		if len(data) == 1 {
			data[0].Ref()
			m.Held, m.Buf = data[0], data[0].ReadOnlyData()
			return nil
		}
		m.Buf = data.Materialize()
		return nil
	case *Checked:
		m.Err = protoCodec.Unmarshal(data, m.Msg)
		return nil
	case *Frame:
		if len(data) == 1 {
			if sb, ok := data[0].(mem.SliceBuffer); ok {
				m.Buf = sb
				return nil
			}
		}
		m.Buf = data.Materialize()
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// ServerOption installs the codec on a gRPC server.
func ServerOption() grpc.ServerOption { return grpc.ForceServerCodecV2(Codec{}) }

// CallOption installs the codec for a client's calls.
func CallOption() grpc.CallOption { return grpc.ForceCodecV2(Codec{}) }

var _ encoding.CodecV2 = Codec{}
