package server_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
)

// BenchmarkGRPCMethod is the per-call cost of a gRPC-method tool through
// the gateway next to a direct gRPC call to the same NotesService method
// with the same arguments, both on loopback in one run (BENCHMARKS.md).
func BenchmarkGRPCMethod(b *testing.B) {
	ctx := context.Background()
	notes := notestest.Start(b, false)
	notes.Service.DontRecord()
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording())
	src, err := grpcimport.FromDescriptorSet(notestest.DescriptorSet())
	if err != nil {
		b.Fatal(err)
	}
	tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: notes.Addr, Method: "CreateNote"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tools[0]}); err != nil {
		b.Fatal(err)
	}
	cc, err := grpc.NewClient(notes.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	direct := testingv1.NewNotesServiceClient(cc)
	args := map[string]any{"title": "groceries", "tags": []any{"milk", "eggs"}, "authorId": "9007199254740993", "priority": "PRIORITY_HIGH"}
	directReq := &testingv1.CreateNoteRequest{Title: "groceries", Tags: []string{"milk", "eggs"}, AuthorId: 9007199254740993, Priority: testingv1.Priority_PRIORITY_HIGH}
	gatewayReq := &gatewayv1.InvokeToolRequest{Tool: "NotesService.CreateNote", Arguments: gatewaytest.Args(b, args), CallId: "bench"}

	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := direct.CreateNote(ctx, directReq); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("gateway", func(b *testing.B) {
		invokeParallel(b, env.Client, gatewayReq)
	})
}
