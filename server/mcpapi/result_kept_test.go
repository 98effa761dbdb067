package mcpapi

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestToolResultReadsTheKeptMessage: an answer whose backend kind kept its
// decoded message (an MCP upstream's) is answered from that message — the
// bytes are not decoded again — and exactly as from the bytes.
func TestToolResultReadsTheKeptMessage(t *testing.T) {
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	size := int64(12)
	for _, tc := range []struct {
		name   string
		ir     *gatewayv1.InvokeResponse
		report normalize.Report
		reason string
	}{
		{"text", &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("a <b> & c"),
			Content: []*gatewayv1.ContentBlock{{Block: &gatewayv1.ContentBlock_Text{Text: &gatewayv1.TextContent{Text: "a <b> & c"}}}}},
			normalize.Report{}, "the echo upstream's answer: one text block"},
		{"structured with meta", &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(st(map[string]any{"count": 2, "s": "<x>"})), IsError: true,
			Content: []*gatewayv1.ContentBlock{
				{Block: &gatewayv1.ContentBlock_Text{Text: &gatewayv1.TextContent{Text: `{"count":2}`}}, Meta: st(map[string]any{"k": "v"}), Annotations: st(map[string]any{"priority": 0.5})},
				{Block: &gatewayv1.ContentBlock_Image{Image: &gatewayv1.MediaContent{Data: []byte{0, 1, 2}, MimeType: "image/png"}}},
				{Block: &gatewayv1.ContentBlock_ResourceLink{ResourceLink: &gatewayv1.ResourceLink{Uri: "file:///a", Name: "a", Size: &size,
					Icons: []*structpb.Struct{st(map[string]any{"src": "https://x/i.png"})}}}},
				{Block: &gatewayv1.ContentBlock_Resource{Resource: &gatewayv1.EmbeddedResource{Uri: "file:///b", Contents: &gatewayv1.EmbeddedResource_Blob{}}}},
			},
			Meta: st(map[string]any{"trace": "t1", "n": 1})},
			normalize.Report{Repairs: []normalize.Repair{{Path: "/a", Kind: normalize.NullDropped}}},
			"every block kind, structured content, _meta, isError and the gateway's repairs"},
	} {
		enc, err := proto.Marshal(tc.ir)
		if err != nil {
			t.Fatal(err)
		}
		fromBytes, err := toolResult(pipeline.Result{Encoded: enc}, tc.report)
		if err != nil {
			t.Fatal(err)
		}
		fromKept, err := toolResult(pipeline.Result{Encoded: enc, Decoded: tc.ir}, tc.report)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := encodeResult(fromBytes)
		b, errB := encodeResult(fromKept)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s: from the bytes %s (%v), from the kept message %s (%v) (%s)", tc.name, a, errA, b, errB, tc.reason)
		}
		// Bytes that do not decode: answered from the kept message all the same.
		if _, err := toolResult(pipeline.Result{Encoded: []byte{0xff}, Decoded: tc.ir}, tc.report); err != nil {
			t.Errorf("%s: the kept message was not read: %v", tc.name, err)
		}
	}
}
