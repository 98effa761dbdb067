package backend

import (
	"bytes"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeCallerField: the hand-encoded caller field is byte for byte what
// proto.Marshal makes of InvokeRequest{caller}, so a backend decodes the raw
// path's request exactly like the decoding path's.
func TestEncodeCallerField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		caller *gatewayv1.Caller
	}{
		{"an API key caller with roles", &gatewayv1.Caller{Subject: "ci-bot", Method: "api-key", Roles: []string{"invoker", "admin"}}},
		{"anonymous: no roles", &gatewayv1.Caller{Subject: "anonymous", Method: "none"}},
		{"empty strings are omitted (proto3)", &gatewayv1.Caller{Method: "jwt"}},
		{"an empty role is still an element", &gatewayv1.Caller{Subject: "s", Roles: []string{"", "r"}}},
		{"lengths past one varint byte", &gatewayv1.Caller{Subject: string(bytes.Repeat([]byte("x"), 300)), Method: "mtls"}},
		{"an empty caller", &gatewayv1.Caller{}},
	} {
		want, err := proto.Marshal(&gatewayv1.InvokeRequest{Caller: tc.caller})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeCallerField(tc.caller)
		if err != nil {
			t.Fatalf("%s: %v", tc.reason, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoded %x, proto.Marshal %x", tc.reason, got, want)
		}
	}
	if _, err := encodeCallerField(&gatewayv1.Caller{Subject: "bad\xff"}); err == nil {
		t.Error("invalid UTF-8 in the subject: want an error, as proto.Marshal gives")
	}
	if b, err := encodeCallerField(nil); b != nil || err != nil {
		t.Errorf("nil caller: got %x, %v; want nothing", b, err)
	}
}
