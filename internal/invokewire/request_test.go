package invokewire_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
)

// TestInvokeRequestBuiltAroundArguments: the request BeginRequest and
// FinishRequest build is byte for byte proto.Marshal's InvokeRequest, for
// argument lengths on both sides of each varint size (the reserved length bytes are closed up),
// with and without a call id, and whatever the size hint said.
func TestInvokeRequestBuiltAroundArguments(t *testing.T) {
	for _, n := range []int{0, 1, 120, 127, 128, 129, 16380, 16383, 16384, 16390, 70000} {
		for _, callID := range []string{"", "call_1"} {
			for _, hint := range []int{0, n} {
				args := &structpb.Struct{}
				if n > 0 {
					// One string member; its overhead is 11 bytes or so:
					// trim the string until the encoding is exactly n.
					s := strings.Repeat("x", n)
					for {
						args.Fields = map[string]*structpb.Value{"k": structpb.NewStringValue(s)}
						if proto.Size(args) <= n || s == "" {
							break
						}
						s = s[:len(s)-1]
					}
				}
				ab, err := proto.Marshal(args)
				if err != nil {
					t.Fatal(err)
				}
				head := invokewire.BeginRequest("create_note", hint, callID)
				msg, got := invokewire.FinishRequest(append(head, ab...), len(head), callID)
				want, _ := proto.Marshal(&gatewayv1.InvokeRequest{Tool: "create_note", Arguments: args, CallId: callID})
				if !bytes.Equal(msg, want) {
					t.Errorf("args %d bytes, call id %q, hint %d: request\n got % x\nwant % x", len(ab), callID, hint, msg, want)
				}
				if !bytes.Equal(got, ab) {
					t.Errorf("args %d bytes: the arguments within the request are not the arguments", len(ab))
				}
				if cap(got) != len(got) {
					t.Errorf("args %d bytes: the arguments' slice can grow into the call id", len(ab))
				}
			}
		}
	}
}
