package grpcapi

import (
	"net"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/flowdrop/gateway/gen/sourceinfo"
)

// TestReflectionServesComments: over real gRPC, reflection answers with the
// contract's files carrying their comments (grpcurl describe shows the
// docs), and the embedded source info is the compiled contract's (a stale
// gen/sourceinfo fails here, before it could describe another contract).
func TestReflectionServesComments(t *testing.T) {
	t.Parallel()
	if _, err := sourceFiles(sourceinfo.FileDescriptorSet); err != nil {
		t.Fatalf("embedded source info: %v", err)
	}
	gs := grpc.NewServer()
	if err := registerReflection(gs); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reason, symbol, file, comment string
	}{
		{"the service's own comment", "flowdrop.gateway.v1.ToolGatewayService", "flowdrop/gateway/v1/gateway.proto", "ToolGatewayService is what agents call"},
		{"a field's comment", "flowdrop.gateway.v1.InvokeToolRequest", "flowdrop/gateway/v1/gateway.proto", "Makes the call idempotent"},
	} {
		if err := stream.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: tc.symbol}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			var fdp descriptorpb.FileDescriptorProto
			if err := proto.Unmarshal(b, &fdp); err != nil {
				t.Fatal(err)
			}
			if fdp.GetName() != tc.file {
				continue
			}
			for _, loc := range fdp.GetSourceCodeInfo().GetLocation() {
				found = found || strings.Contains(loc.GetLeadingComments(), tc.comment)
			}
		}
		if !found {
			t.Errorf("%s: %s's file has no comment %q (%s)", tc.symbol, tc.file, tc.comment, tc.reason)
		}
	}
}

// TestReflectionRetainsNoDescriptorsUntilUsed: registering reflection keeps
// no built descriptors on the heap (built, they hold ~0.85 MB, which the
// collector's target multiplies by 1 + --gc-percent/100 in every gateway's
// resident memory); TestReflectionServesComments holds that the first
// request still gets them, comments included. Not parallel: it reads the
// heap of the whole test process.
func TestReflectionRetainsNoDescriptorsUntilUsed(t *testing.T) {
	// Once first, so what the protobuf runtime builds for good on a first
	// use (the compiled contract's lazily unmarshalled descriptors) is not
	// counted against registerReflection.
	if _, err := sourceFiles(sourceinfo.FileDescriptorSet); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	gs := grpc.NewServer()
	if err := registerReflection(gs); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(gs)
	const limit = 256 << 10 // the reflection services and gRPC's server: a few KB
	if retained := int64(after.HeapAlloc) - int64(before.HeapAlloc); retained > limit {
		t.Errorf("registering reflection retained %d bytes of heap, want at most %d: the descriptors are built before any request asks for them", retained, limit)
	}
}
