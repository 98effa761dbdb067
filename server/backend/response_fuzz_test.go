package backend

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// FuzzPlainInvokeResponse: the backend response reader never panics and
// agrees with proto.Unmarshal: a response it hands on as bytes has no
// field the gateway does not know at its top level.
func FuzzPlainInvokeResponse(f *testing.F) {
	for _, r := range []*gatewayv1.InvokeResponse{{}, {Result: structpb.NewStringValue("ok")}, {IsError: true, Result: structpb.NewNullValue()}} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{0x18, 0x01})
	f.Add([]byte{0x10, 0x01, 0x10, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), 512)] // bounded minimization (see normalize's maxFuzzInput)
		if !plainInvokeResponse(b) {
			return
		}
		var r gatewayv1.InvokeResponse
		if err := proto.Unmarshal(b, &r); err != nil {
			return // the result's own bytes are the backend's; the caller's decoder judges them
		}
		if len(r.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("plain response %x holds unknown fields", b)
		}
	})
}
