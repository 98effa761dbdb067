package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// pathDelta runs f and reports which path the call took: forwarded as
// received, arguments decoded, or the request decoded whole.
func pathDelta(g *server.Gateway, f func()) (fast, decodedArgs, decodedAll int64) {
	f0, a0, w0 := g.PathCounts()
	f()
	f1, a1, w1 := g.PathCounts()
	return f1 - f0, a1 - a0, w1 - w0
}

// backendCall finds the backend's record of a call by its call id.
func backendCall(t *testing.T, env *gatewaytest.Env, tool, callID string) *gatewayv1.InvokeRequest {
	t.Helper()
	for _, c := range env.Backend.CallsFor(tool) {
		if c.Request.GetCallId() == callID {
			return c.Request
		}
	}
	t.Fatalf("backend never received call %q", callID)
	return nil
}

func TestRawPath(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t,
		gatewaytest.WithTool(gatewaytest.ObjectTool("precondition")),
		gatewaytest.WithBackendHandler("precondition", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			st, _ := status.New(codes.FailedPrecondition, "note store is read-only").WithDetails(&errdetails.ErrorInfo{
				Reason: "READ_ONLY", Domain: "notes.example", Metadata: map[string]string{"k": "v"},
			})
			return nil, st.Err()
		}),
	)
	invoke := func(tool string, args map[string]any, callID string) (resp *gatewayv1.InvokeToolResponse, err error) {
		req := &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args), CallId: callID}
		return env.Client.InvokeTool(testCtx(t), req)
	}

	// decodingPathCaller is what the decoding path sends as the caller for
	// this client: a call whose arguments come as JSON text takes that path.
	decodingPathCaller := func(t *testing.T, callID string) *gatewayv1.Caller {
		t.Helper()
		req := &gatewayv1.InvokeToolRequest{Tool: "create_note", ArgumentsJson: `{"title":"a & b"}`, CallId: callID}
		if _, err := env.Client.InvokeTool(testCtx(t), req); err != nil {
			t.Fatal(err)
		}
		return backendCall(t, env, "create_note", callID).GetCaller()
	}
	// With the fast paths off every call takes the decoding path.
	wantFast, wantDecoded := int64(1), int64(0)
	if gatewaytest.FastPathsOff() {
		wantFast, wantDecoded = 0, 1
	}
	if env.Registry.FastPaths() == gatewaytest.FastPathsOff() {
		t.Fatalf("registry fast paths %v with the gateway's fast paths off=%v: the switch must reach the schema engine",
			env.Registry.FastPaths(), gatewaytest.FastPathsOff())
	}

	t.Run("repair-is-made-on-the-wire", func(t *testing.T) {
		var resp *gatewayv1.InvokeToolResponse
		var err error
		fast, decArgs, _ := pathDelta(env.Gateway, func() {
			resp, err = invoke("create_note", map[string]any{"title": "Ember &amp; Oak", "tags": `["a"]`}, "raw-slow")
		})
		if err != nil {
			t.Fatal(err)
		}
		if fast != wantFast || decArgs != wantDecoded {
			t.Errorf("fast=%d decodedArgs=%d, want %d and %d: a repair is made on the wire, only the repaired members decoded (unless the fast paths are off)",
				fast, decArgs, wantFast, wantDecoded)
		}
		if len(resp.GetRepairs()) != 2 {
			t.Errorf("repairs = %v, want the entity and JSON repairs", resp.GetRepairs())
		}
		got := backendCall(t, env, "create_note", "raw-slow")
		want := gatewaytest.Args(t, map[string]any{"title": "Ember & Oak", "tags": []any{"a"}})
		if !proto.Equal(got.GetArguments(), want) {
			t.Errorf("backend got %v, want the repaired %v", got.GetArguments(), want)
		}
		if want := decodingPathCaller(t, "raw-slow-ref"); !proto.Equal(got.GetCaller(), want) {
			t.Errorf("backend got caller %v, want %v (what the decoding path sends)", got.GetCaller(), want)
		}
	})

	t.Run("clean-request-is-forwarded-as-received", func(t *testing.T) {
		args := map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "?a=1&copy=2"}
		var resp *gatewayv1.InvokeToolResponse
		var err error
		fast, decArgs, decAll := pathDelta(env.Gateway, func() { resp, err = invoke("create_note", args, "raw-fast") })
		if err != nil {
			t.Fatal(err)
		}
		if fast != wantFast || decArgs != wantDecoded || decAll != 0 {
			t.Errorf("fast=%d decodedArgs=%d decodedAll=%d, want %d, %d, 0: a clean request must not be decoded (unless the fast paths are off)",
				fast, decArgs, decAll, wantFast, wantDecoded)
		}
		got := backendCall(t, env, "create_note", "raw-fast")
		if !proto.Equal(got.GetArguments(), gatewaytest.Args(t, args)) {
			t.Errorf("backend got %v, want the arguments as sent", got.GetArguments())
		}
		if got.GetTool() != "create_note" {
			t.Errorf("backend got tool %q", got.GetTool())
		}
		if want := decodingPathCaller(t, "raw-fast-ref"); !proto.Equal(got.GetCaller(), want) {
			t.Errorf("backend got caller %v, want %v (what the decoding path sends)", got.GetCaller(), want)
		}
		if len(resp.GetRepairs()) != 0 {
			t.Errorf("repairs = %v, want none", resp.GetRepairs())
		}
		echoed := resp.GetResult().GetStructValue().GetFields()["arguments"].GetStructValue()
		if !proto.Equal(echoed, got.GetArguments()) {
			t.Errorf("response is not the backend's echo: %v", resp.GetResult())
		}
	})

	t.Run("invalid-arguments-still-refused", func(t *testing.T) {
		var err error
		fast, decArgs, _ := pathDelta(env.Gateway, func() { _, err = invoke("create_note", map[string]any{"tags": []any{"a"}}, "raw-invalid") })
		if fast != 0 || decArgs != 1 {
			t.Errorf("fast=%d decodedArgs=%d, want 0 and 1", fast, decArgs)
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err = %v, want InvalidArgument", err)
		}
		br, _, _ := invalidDetails(t, err)
		if len(br.GetFieldViolations()) == 0 {
			t.Errorf("no BadRequest field violations in %v", err)
		}
		for _, c := range env.Backend.CallsFor("create_note") {
			if c.Request.GetCallId() == "raw-invalid" {
				t.Error("invalid call reached the backend")
			}
		}
	})

	t.Run("backend-status-passes-through-on-the-fast-path", func(t *testing.T) {
		var err error
		fast, _, _ := pathDelta(env.Gateway, func() { _, err = invoke("precondition", map[string]any{"x": 1}, "raw-status") })
		if fast != wantFast {
			t.Errorf("fast=%d, want %d", fast, wantFast)
		}
		st := status.Convert(err)
		if st.Code() != codes.FailedPrecondition {
			t.Fatalf("err = %v, want FailedPrecondition", err)
		}
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if i, ok := d.(*errdetails.ErrorInfo); ok && i.GetDomain() == "notes.example" {
				info = i
			}
		}
		if info.GetReason() != "READ_ONLY" || info.GetMetadata()["k"] != "v" {
			t.Errorf("backend's ErrorInfo lost: %v", st.Details())
		}
	})

	t.Run("received-buffers-are-not-reused-while-a-call-needs-them", func(t *testing.T) {
		// The raw path forwards gRPC's own receive buffer (pooled above
		// 1 KiB) instead of a copy, and returns it to the pool when the
		// handler ends. Released too early, a concurrent call's request would
		// overwrite it: every backend and every caller must see their own
		// bytes. Sizes: unpooled, pooled, and split over several frames.
		sizes := []int{200, 3 << 10, 40 << 10}
		const perSize = 24
		var wg sync.WaitGroup
		errs := make(chan error, len(sizes)*perSize)
		for _, n := range sizes {
			for i := range perSize {
				wg.Go(func() {
					id := fmt.Sprintf("held-%d-%d", n, i)
					body := strings.Repeat(string(rune('a'+i%26)), n) + id
					resp, err := invoke("create_note", map[string]any{"title": id, "body": body}, id)
					if err != nil {
						errs <- fmt.Errorf("%s: %v", id, err)
						return
					}
					echoed := resp.GetResult().GetStructValue().GetFields()["arguments"].GetStructValue().GetFields()
					if echoed["body"].GetStringValue() != body || echoed["title"].GetStringValue() != id {
						errs <- fmt.Errorf("%s: caller got another call's arguments back", id)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, n := range sizes {
			for i := range perSize {
				id := fmt.Sprintf("held-%d-%d", n, i)
				want := strings.Repeat(string(rune('a'+i%26)), n) + id
				if got := backendCall(t, env, "create_note", id).GetArguments().GetFields()["body"].GetStringValue(); got != want {
					t.Errorf("%s: backend got %d bytes of another body", id, len(got))
				}
			}
		}
	})

	t.Run("caller-field-from-the-client-is-not-forwarded", func(t *testing.T) {
		// A client that sends InvokeRequest.caller itself must not reach the
		// backend with it. At the gateway field 4 is the idempotency key:
		// caller bytes there are refused as a key; a real key never lets the
		// message be forwarded whole; field 5 (arguments_json) beside
		// arguments is refused; a higher unknown field takes the decoding path.
		spoof, _ := proto.Marshal(&gatewayv1.Caller{Subject: "root", Roles: []string{"admin"}})
		for _, tc := range []struct {
			name, callID string
			field        protowire.Number
			key          string
			refused      bool
			decAll       int64
			reason       string
		}{
			{"caller bytes as field 4", "raw-spoof-4", 4, "", true, 0, "field 4 is the idempotency key: caller bytes are not printable ASCII"},
			{"a key in field 4", "raw-key-4", 0, "raw-key", false, 0, "scanned, but the message is not the backend request's head"},
			{"caller bytes as field 5", "raw-spoof-5", 5, "", true, 0, "field 5 is arguments_json: beside arguments it is refused"},
			{"caller bytes as field 6", "raw-spoof-6", 6, "", false, 1, "unknown fields take the decoding path and are dropped"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t"}), CallId: tc.callID, IdempotencyKey: tc.key}
				if tc.field != 0 {
					req.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, tc.field, protowire.BytesType), spoof))
				}
				var err error
				fast, _, decAll := pathDelta(env.Gateway, func() { _, err = env.Client.InvokeTool(testCtx(t), req) })
				if tc.refused {
					if status.Code(err) != codes.InvalidArgument {
						t.Fatalf("%v; want InvalidArgument (%s)", err, tc.reason)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if fast != 0 || decAll != tc.decAll {
					t.Errorf("fast=%d decodedAll=%d, want 0 and %d (%s)", fast, decAll, tc.decAll, tc.reason)
				}
				if got, want := backendCall(t, env, "create_note", tc.callID).GetCaller(), decodingPathCaller(t, "raw-spoof-ref"); !proto.Equal(got, want) {
					t.Errorf("backend got caller %v, want the gateway's %v (%s)", got, want, tc.reason)
				}
			})
		}
	})
}

// TestRawPathReflection: the hand-written service descriptor keeps the
// generated one's proto file, so reflection (grpcurl) still describes it.
func TestRawPathReflection(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	stream, err := reflectionpb.NewServerReflectionClient(env.Conn).ServerReflectionInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.CloseSend()
	svc := gatewayv1.ToolGatewayService_ServiceDesc.ServiceName
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	files := resp.GetFileDescriptorResponse().GetFileDescriptorProto()
	if len(files) == 0 {
		t.Fatalf("no file descriptor for %s: %v", svc, resp)
	}
	var fd descriptorpb.FileDescriptorProto
	if err := proto.Unmarshal(files[0], &fd); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range fd.GetService() {
		if s.GetName() != "ToolGatewayService" {
			continue
		}
		for _, m := range s.GetMethod() {
			if m.GetName() == "InvokeTool" && m.GetInputType() == ".flowdrop.gateway.v1.InvokeToolRequest" &&
				m.GetOutputType() == ".flowdrop.gateway.v1.InvokeToolResponse" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("reflection does not describe InvokeTool in %s", fd.GetName())
	}
}
