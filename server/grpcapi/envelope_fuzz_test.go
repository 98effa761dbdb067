package grpcapi

import (
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// FuzzScanEnvelope: the raw InvokeTool request scan never panics and
// agrees with proto.Unmarshal: an envelope it accepts decodes to the same
// tool and call id, with no unknown fields.
func FuzzScanEnvelope(f *testing.F) {
	for _, r := range []*gatewayv1.InvokeToolRequest{{Tool: "create_note", CallId: "c"}, {}, {Tool: "t"}} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe})
	f.Add([]byte{0x22, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:min(len(b), 512)] // bounded minimization (see normalize's maxFuzzInput)
		env, ok := scanEnvelope(b)
		if !ok {
			return
		}
		var req gatewayv1.InvokeToolRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			// The scan leaves the arguments' bytes to the pipeline.
			if !env.hasArgs {
				t.Fatalf("scan accepted %x, proto.Unmarshal: %v", b, err)
			}
			return
		}
		if req.GetTool() != env.tool || req.GetCallId() != env.callID || len(req.ProtoReflect().GetUnknown()) > 0 {
			t.Fatalf("scan of %x: tool %q call %q; decoded %v", b, env.tool, env.callID, &req)
		}
	})
}
