package bareproxy

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// Codec is a gRPC CodecV2 that moves message bytes without decoding them. It
// only accepts *Frame values, so a misuse fails loudly instead of silently
// re-encoding something.
//
// Name returns "proto" on purpose: the content-type on the wire stays
// application/grpc+proto, so ordinary proto peers on either side accept the
// frames as their own messages.
type Codec struct{}

// Name implements encoding.CodecV2.
func (Codec) Name() string { return "proto" }

// Marshal implements encoding.CodecV2. gRPC frees the returned slice after
// writing it, so it gets its own reference and the Frame keeps its own.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*Frame)
	if !ok {
		return nil, fmt.Errorf("bareproxy codec: cannot marshal %T, want *bareproxy.Frame", v)
	}
	f.buf.Ref()
	return f.buf, nil
}

// Unmarshal implements encoding.CodecV2. gRPC frees data when Unmarshal
// returns, so the Frame takes a reference to keep the bytes without copying.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*Frame)
	if !ok {
		return fmt.Errorf("bareproxy codec: cannot unmarshal into %T, want *bareproxy.Frame", v)
	}
	f.buf.Free()
	data.Ref()
	f.buf = data
	return nil
}

// Frame is one undecoded gRPC message. The zero value is an empty message.
// A Frame filled by Unmarshal holds pooled buffers: call Free when done.
type Frame struct {
	buf mem.BufferSlice
}

// NewFrame wraps b without copying; b must not change while the Frame is in
// use (the driver sends one pre-marshalled payload from many goroutines).
func NewFrame(b []byte) *Frame {
	return &Frame{buf: mem.BufferSlice{mem.SliceBuffer(b)}}
}

// Len is the message size in bytes.
func (f *Frame) Len() int { return f.buf.Len() }

// Bytes returns a contiguous copy of the message.
func (f *Frame) Bytes() []byte { return f.buf.Materialize() }

// Free releases the Frame's reference to its buffers.
func (f *Frame) Free() {
	f.buf.Free()
	f.buf = nil
}
