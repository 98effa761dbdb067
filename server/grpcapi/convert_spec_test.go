package grpcapi

import (
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// TestConvertTransportAndAnnotations: spec.tls and annotations survive the
// conversion both ways (an unset hint stays unset), and a caller who does
// not see backends sees that TLS is required but no file path.
func TestConvertTransportAndAnnotations(t *testing.T) {
	in := &gatewayv1.Tool{Name: "n", Spec: &gatewayv1.BackendSpec{
		Kind: &gatewayv1.BackendSpec_GrpcMethod{GrpcMethod: &gatewayv1.GrpcMethod{Target: "127.0.0.1:1", Method: "/p.S/M"}},
		Tls:  &gatewayv1.TransportSecurity{CaFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", ServerName: "s", Require: true}},
		Annotations: &gatewayv1.ToolAnnotations{IdempotentHint: proto.Bool(true), DestructiveHint: proto.Bool(false)}}
	tool, err := toolFromProto(in)
	if err != nil {
		t.Fatal(err)
	}
	if !tool.Idempotent() || tool.Annotations.ReadOnlyHint != nil {
		t.Errorf("annotations = %+v, want idempotent, read-only unset", tool.Annotations)
	}
	out := toolProto(tool)
	if !proto.Equal(out, in) {
		t.Errorf("round trip:\n got %v\nwant %v", out, in)
	}
	hideSpecTarget(out)
	if got := out.GetSpec().GetTls(); !got.GetRequire() || got.GetCaFile() != "" || got.GetCertFile() != "" || got.GetKeyFile() != "" || got.GetServerName() != "" {
		t.Errorf("hidden spec.tls = %v, want only require (no paths on the gateway's disk)", got)
	}
	if tool.Spec.TLS.CAFile != "/etc/ca.pem" {
		t.Error("hiding changed the stored tool")
	}
}
