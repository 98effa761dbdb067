package rawcodec

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// countingPool is a mem.BufferPool that counts the buffers given back, so
// a test sees when a received buffer is recycled.
type countingPool struct{ puts atomic.Int32 }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.puts.Add(1) }

// pooled is b in one pooled buffer, as gRPC hands a received message to
// the codec.
func pooled(p *countingPool, b []byte) mem.Buffer {
	c := bytes.Clone(b)
	return mem.NewBuffer(&c, p)
}

func request(t *testing.T) (*gatewayv1.InvokeToolRequest, []byte) {
	t.Helper()
	// Over gRPC's pooling threshold (1 KiB): smaller buffers are never pooled.
	args, err := structpb.NewStruct(map[string]any{"note": strings.Repeat("n", 2048)})
	if err != nil {
		t.Fatal(err)
	}
	m := &gatewayv1.InvokeToolRequest{Tool: "weather.get", Arguments: args, CallId: "call_1"}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// TestUnmarshalKeepsReceivedBytes: a Request keeps the received bytes
// (one buffer: referenced, not copied, and not recycled until Release;
// split: joined), a Frame keeps an unpooled buffer as is and copies a
// pooled one, a Checked reports a bad message in Err rather than failing
// the codec, and any other message decodes as proto.
func TestUnmarshalKeepsReceivedBytes(t *testing.T) {
	t.Parallel()
	want, wire := request(t)
	c := Codec{}

	t.Run("request one buffer", func(t *testing.T) {
		t.Parallel()
		p := &countingPool{}
		data := mem.BufferSlice{pooled(p, wire)}
		var r Request
		if err := c.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		data.Free() // gRPC frees its reference once Unmarshal returns
		if p.puts.Load() != 0 {
			t.Fatal("the received buffer was recycled while the Request still holds it")
		}
		if !bytes.Equal(r.Buf, wire) {
			t.Fatalf("Request.Buf %x, want the received bytes %x", r.Buf, wire)
		}
		r.Release()
		if p.puts.Load() != 1 {
			t.Errorf("after Release the buffer was given back %d times, want 1", p.puts.Load())
		}
	})
	t.Run("request split", func(t *testing.T) {
		t.Parallel()
		var r Request
		data := mem.BufferSlice{mem.SliceBuffer(wire[:5]), mem.SliceBuffer(wire[5:])}
		if err := c.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Buf, wire) || r.Held != nil {
			t.Errorf("Request.Buf %x held %v, want the joined bytes and nothing held", r.Buf, r.Held)
		}
	})
	t.Run("frame unpooled", func(t *testing.T) {
		t.Parallel()
		b := bytes.Clone(wire)
		var f Frame
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &f); err != nil {
			t.Fatal(err)
		}
		if &f.Buf[0] != &b[0] {
			t.Error("an unpooled frame was copied; nothing recycles it, so it is kept as is")
		}
	})
	t.Run("frame pooled", func(t *testing.T) {
		t.Parallel()
		p := &countingPool{}
		buf := pooled(p, wire)
		held := buf.ReadOnlyData()
		var f Frame
		if err := c.Unmarshal(mem.BufferSlice{buf}, &f); err != nil {
			t.Fatal(err)
		}
		if &f.Buf[0] == &held[0] {
			t.Fatal("a pooled frame was kept, not copied: gRPC recycles it once Unmarshal returns")
		}
		if !bytes.Equal(f.Buf, wire) {
			t.Errorf("Frame.Buf %x, want %x", f.Buf, wire)
		}
	})
	t.Run("checked", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, reason string
			in           []byte
			wantErr      bool
		}{
			{name: "good", reason: "a good message decodes into Msg", in: wire},
			{name: "bad", reason: "a truncated message is the caller's error, left in Err", in: wire[:len(wire)-3], wantErr: true},
		} {
			ch := Checked{Msg: &gatewayv1.InvokeToolRequest{}}
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.in)}, &ch); err != nil {
				t.Fatalf("%s: the codec failed (%v); a decode failure belongs in Err (%s)", tc.name, err, tc.reason)
			}
			if (ch.Err != nil) != tc.wantErr {
				t.Errorf("%s: Err %v, want error %v (%s)", tc.name, ch.Err, tc.wantErr, tc.reason)
			}
			if !tc.wantErr && !proto.Equal(ch.Msg, want) {
				t.Errorf("%s: decoded %v, want %v", tc.name, ch.Msg, want)
			}
		}
	})
	t.Run("proto", func(t *testing.T) {
		t.Parallel()
		var m gatewayv1.InvokeToolRequest
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &m); err != nil || !proto.Equal(&m, want) {
			t.Errorf("a plain message decoded %v (%v), want %v", &m, err, want)
		}
	})
}

// TestMarshalSendsBytes: a Response is sent as its bytes; a Forward is its
// received head followed by more encoded fields — the same message
// proto.Marshal makes of them all — with the held buffer referenced for
// the send, not recycled while gRPC still sends it; any other message is
// proto.Marshal's.
func TestMarshalSendsBytes(t *testing.T) {
	t.Parallel()
	c := Codec{}
	m, head := request(t)
	full := proto.Clone(m).(*gatewayv1.InvokeToolRequest)
	full.IdempotencyKey = "k-1"
	tail, err := proto.Marshal(&gatewayv1.InvokeToolRequest{IdempotencyKey: "k-1"})
	if err != nil {
		t.Fatal(err)
	}

	p := &countingPool{}
	held := pooled(p, head)
	out, err := c.Marshal(&Forward{Head: held.ReadOnlyData(), Held: held, Tail: tail})
	if err != nil {
		t.Fatal(err)
	}
	held.Free() // the handler's own reference, done with
	if p.puts.Load() != 0 {
		t.Fatal("the held head was recycled before gRPC sent it")
	}
	var got gatewayv1.InvokeToolRequest
	if err := proto.Unmarshal(out.Materialize(), &got); err != nil || !proto.Equal(&got, full) {
		t.Errorf("forwarded %v (%v), want %v", &got, err, full)
	}
	out.Free() // gRPC, once sent
	if p.puts.Load() != 1 {
		t.Errorf("after the send the head was given back %d times, want 1", p.puts.Load())
	}

	if out, err := c.Marshal(&Forward{Head: head}); err != nil || len(out) != 1 || !bytes.Equal(out.Materialize(), head) {
		t.Errorf("a Forward with no tail: %d buffers %v, want the head alone", len(out), err)
	}
	if out, err := c.Marshal(&Response{Buf: head}); err != nil || !bytes.Equal(out.Materialize(), head) {
		t.Errorf("a Response was not sent as its bytes (%v)", err)
	}
	out, err = c.Marshal(m)
	var plain gatewayv1.InvokeToolRequest
	if err != nil || proto.Unmarshal(out.Materialize(), &plain) != nil || !proto.Equal(&plain, m) {
		t.Errorf("a plain message was not encoded as proto (%v)", err)
	}
	if c.Name() != "proto" {
		t.Errorf("Name %q: peers must see the usual proto content type", c.Name())
	}
}
