package backend

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestCallerFieldIsCallerProto: the caller field following a forwarded
// request's bytes is byte for byte what proto.Marshal makes of
// InvokeRequest{caller: callerProto(c)}, so a backend sees the same caller
// on the forwarding path as on the re-encoding path (anonymous: no roles).
func TestCallerFieldIsCallerProto(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		caller policy.Caller
	}{
		{"an API key caller with roles", policy.Caller{Subject: "ci-bot", Method: "api-key", Roles: []string{"invoker", "admin"}}},
		{"anonymous (auth off): its roles are not sent", policy.Caller{Subject: "anonymous", Method: policy.MethodNone, Roles: []string{"admin"}}},
		{"empty strings are omitted (proto3)", policy.Caller{Method: "jwt"}},
	} {
		c := pipeline.NewCall("t", "", nil)
		c.Caller = tc.caller
		want, err := proto.Marshal(&gatewayv1.InvokeRequest{Caller: callerProto(c)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := callerField(c)
		if err != nil {
			t.Fatalf("%s: %v", tc.reason, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoded %x, proto.Marshal %x", tc.reason, got, want)
		}
	}
}
