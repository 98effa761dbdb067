package bareproxy_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/bareproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingBackend is a real ToolBackendService that remembers what reached it.
type recordingBackend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
	mu   sync.Mutex
	got  []*gatewayv1.InvokeRequest
	md   []metadata.MD
	fail error // returned instead of a result when set
}

func (b *recordingBackend) Invoke(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	b.mu.Lock()
	b.got = append(b.got, req)
	b.md = append(b.md, md)
	b.mu.Unlock()
	if b.fail != nil {
		return nil, b.fail
	}
	grpc.SetHeader(ctx, metadata.Pairs("x-backend-header", "h1"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-backend-trailer", "t1"))
	return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("done:" + req.GetCallId()), IsError: true}, nil
}

func serve(t testing.TB, srv *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String()
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// startChain starts backend ← proxy on loopback and returns a client conn to the proxy.
func startChain(t *testing.T, be *recordingBackend, decode bool) *grpc.ClientConn {
	t.Helper()
	bs := grpc.NewServer()
	gatewayv1.RegisterToolBackendServiceServer(bs, be)
	beAddr := serve(t, bs)
	p := bareproxy.New(dial(t, beAddr), bareproxy.Options{Decode: decode})
	proxyAddr := serve(t, grpc.NewServer(p.ServerOptions()...))
	return dial(t, proxyAddr)
}

func sampleArgs(t *testing.T) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(map[string]any{
		"title":  "Ember &amp;amp; Oak",
		"ops":    `["a","b"]`,
		"n":      3.5,
		"flag":   true,
		"nested": map[string]any{"k": []any{"x", 1.0, nil}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForwardsIdenticalRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decode bool
		reason string
	}{
		{"bare", false, "bare mode must hand the backend the agent's bytes untouched"},
		{"decode", true, "decode mode re-encodes but must not change what the backend receives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := &recordingBackend{}
			cc := startChain(t, be, tc.decode)
			args := sampleArgs(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx = metadata.AppendToOutgoingContext(ctx, "x-agent", "a1")
			var header, trailer metadata.MD
			resp, err := gatewayv1.NewToolGatewayServiceClient(cc).InvokeTool(ctx,
				&gatewayv1.InvokeToolRequest{Tool: "bench_tool", Arguments: args, CallId: "call-1"},
				grpc.Header(&header), grpc.Trailer(&trailer))
			if err != nil {
				t.Fatalf("InvokeTool through proxy: %v (%s)", err, tc.reason)
			}
			want := &gatewayv1.InvokeRequest{Tool: "bench_tool", Arguments: args, CallId: "call-1"}
			be.mu.Lock()
			defer be.mu.Unlock()
			if len(be.got) != 1 {
				t.Fatalf("backend got %d calls, want 1", len(be.got))
			}
			if !proto.Equal(be.got[0], want) {
				t.Errorf("backend received %v, want %v (%s)", be.got[0], want, tc.reason)
			}
			if got := be.md[0].Get("x-agent"); len(got) != 1 || got[0] != "a1" {
				t.Errorf("backend metadata x-agent = %v, want [a1]: request metadata must be forwarded", got)
			}
			wantResp := &gatewayv1.InvokeToolResponse{Result: structpb.NewStringValue("done:call-1"), IsError: true}
			if !proto.Equal(resp, wantResp) {
				t.Errorf("response = %v, want %v: response bytes must come back unchanged", resp, wantResp)
			}
			if got := header.Get("x-backend-header"); len(got) != 1 || got[0] != "h1" {
				t.Errorf("response header = %v, want [h1]", got)
			}
			if got := trailer.Get("x-backend-trailer"); len(got) != 1 || got[0] != "t1" {
				t.Errorf("response trailer = %v, want [t1]", got)
			}
		})
	}
}

func TestUnmappedMethodKeepsItsName(t *testing.T) {
	be := &recordingBackend{}
	cc := startChain(t, be, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &gatewayv1.InvokeRequest{Tool: "t", CallId: "c", Caller: &gatewayv1.Caller{Subject: "s", Method: "none"}}
	if _, err := gatewayv1.NewToolBackendServiceClient(cc).Invoke(ctx, req); err != nil {
		t.Fatalf("Invoke through proxy: %v", err)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if !proto.Equal(be.got[0], req) {
		t.Errorf("backend received %v, want %v", be.got[0], req)
	}
}

func TestBackendStatusPassesThrough(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "quota exhausted for tool").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "ops", Description: "not an array"}}},
		&errdetails.RetryInfo{},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		decode bool
		reason string
	}{
		{"bare", false, "the caller must see the backend's own code, message and details"},
		{"decode", true, "decoding the request must not change how errors come back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := startChain(t, &recordingBackend{fail: st.Err()}, tc.decode)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := gatewayv1.NewToolGatewayServiceClient(cc).InvokeTool(ctx,
				&gatewayv1.InvokeToolRequest{Tool: "bench_tool", Arguments: sampleArgs(t), CallId: "c"})
			got := status.Convert(err)
			if got.Code() != codes.FailedPrecondition || got.Message() != "quota exhausted for tool" {
				t.Fatalf("status = %v %q, want FailedPrecondition %q (%s)", got.Code(), got.Message(), "quota exhausted for tool", tc.reason)
			}
			if !proto.Equal(got.Proto(), st.Proto()) {
				t.Errorf("status proto = %v, want %v (%s)", got.Proto(), st.Proto(), tc.reason)
			}
		})
	}
}

func TestDecodeModeRejectsGarbage(t *testing.T) {
	cc := startChain(t, &recordingBackend{}, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// 0xff is not a valid protobuf tag, so the decode proxy must refuse it
	// while the bare proxy would forward it blindly.
	err := cc.Invoke(ctx, gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
		bareproxy.NewFrame([]byte{0xff, 0xff}), &bareproxy.Frame{}, grpc.ForceCodecV2(bareproxy.Codec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("status = %v, want InvalidArgument for an undecodable request", err)
	}
}
