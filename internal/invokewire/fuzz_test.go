package invokewire_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
)

// maxFuzzInput bounds an input, so minimization stays short (see
// normalize's maxFuzzInput).
const maxFuzzInput = 512

// FuzzScanToolRequest: the raw InvokeTool request scan never panics and
// agrees with proto.Unmarshal: an envelope it accepts decodes to the same
// tool, call id and key, with no unknown fields.
func FuzzScanToolRequest(f *testing.F) {
	for _, r := range []*gatewayv1.InvokeToolRequest{{Tool: "create_note", CallId: "c"}, {}, {Tool: "t", IdempotencyKey: "k"}} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe})
	f.Add([]byte{0x22, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), maxFuzzInput)]
		r, ok := invokewire.ScanToolRequest(b)
		if !ok {
			return
		}
		var req gatewayv1.InvokeToolRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			// The scan leaves the arguments' bytes to the pipeline.
			if !r.HasArgs {
				t.Fatalf("scan accepted %x, proto.Unmarshal: %v", b, err)
			}
			return
		}
		if req.GetTool() != r.Tool || req.GetCallId() != r.CallID || req.GetIdempotencyKey() != r.IdempotencyKey ||
			len(req.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("scan of %x: %+v; decoded %v", b, r, &req)
		}
	})
}

// FuzzResponse: the InvokeResponse readers never panic and agree with
// proto.Unmarshal: bytes IsPlainResponse hands on hold no field the gateway
// does not know at the top level, and ResponseResult reads what
// proto.Unmarshal does wherever that decodes with one result field.
func FuzzResponse(f *testing.F) {
	for _, r := range []*gatewayv1.InvokeResponse{{}, {Result: structpb.NewStringValue("ok")}, {IsError: true, Result: structpb.NewNullValue()}} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{0x18, 0x01})
	f.Add([]byte{0x10, 0x01, 0x10, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), maxFuzzInput)]
		plain := invokewire.IsPlainResponse(b)
		v, isError, ok := invokewire.ResponseResult(b)
		var r gatewayv1.InvokeResponse
		if err := proto.Unmarshal(b, &r); err != nil {
			return // the result's own bytes are the backend's; the caller's decoder judges them
		}
		if plain && len(r.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("plain response %x holds unknown fields", b)
		}
		if !ok {
			t.Fatalf("ResponseResult refused %x, which proto.Unmarshal decodes", b)
		}
		if resultFields(b) <= 1 && (!proto.Equal(v, r.GetResult()) || isError != r.GetIsError()) {
			t.Fatalf("ResponseResult of %x: %v %v; proto.Unmarshal: %v", b, v, isError, &r)
		}
	})
}

// resultFields counts the top-level result fields of bytes that decode.
func resultFields(b []byte) int {
	n := 0
	for len(b) > 0 {
		num, typ, m := protowire.ConsumeTag(b)
		b = b[m:]
		if num == 1 && typ == protowire.BytesType {
			n++
		}
		b = b[protowire.ConsumeFieldValue(num, typ, b):]
	}
	return n
}
