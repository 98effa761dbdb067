package grpcapi

import (
	"context"
	"net"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

// TestRegistryServiceWatchLimits: WatchTools streams are bounded per caller
// and in total over real gRPC; a stream over a bound is refused
// ResourceExhausted with an ErrorInfo naming the bound, and a stream that
// ends gives its slot back.
func TestRegistryServiceWatchLimits(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	reg := registry.New(store)
	if err := reg.Start(rsCtx(t)); err != nil {
		t.Fatal(err)
	}
	// The caller is the x-test-caller metadata (the gateway's
	// authentication interceptor puts the authenticated one there);
	// ended hears each WatchTools handler return.
	ended := make(chan string, 16)
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		who := md.Get("x-test-caller")[0]
		err := h(srv, &callerStream{ServerStream: ss, ctx: policy.WithCaller(ss.Context(), policy.Caller{Subject: who, Method: policy.MethodAPIKey})})
		ended <- who
		return err
	}))
	svc := registerRegistryService(gs, reg, WithWatchLimits(WatchLimits{PerCaller: 2, Total: 3}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		svc.Close()
		gs.Stop()
		<-served
		reg.Close()
		store.Close()
	})
	client := gatewayv1.NewToolRegistryServiceClient(conn)
	if _, err := client.RegisterTool(rsCtx(t), &gatewayv1.RegisterToolRequest{Tool: boardTool(t, "a")}); err != nil {
		t.Fatal(err)
	}

	// open opens a stream as who and reads its first message: the tool's
	// PUT once the stream holds a slot, or the refusal.
	cancels := map[string][]context.CancelFunc{}
	open := func(who string) error {
		ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(rsCtx(t), "x-test-caller", who))
		t.Cleanup(cancel)
		s, err := client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{})
		if err == nil {
			_, err = s.Recv()
		}
		if err == nil {
			cancels[who] = append(cancels[who], cancel)
		} else {
			<-ended
		}
		return err
	}
	cases := []struct {
		reason string
		who    string
		limit  string // "" when the stream opens
	}{
		{reason: "a caller's first stream opens", who: "alice"},
		{reason: "a caller's second stream opens (the per-caller bound is 2)", who: "alice"},
		{reason: "a caller's third stream is over the per-caller bound", who: "alice", limit: "watch_streams_per_caller"},
		{reason: "another caller's stream opens: the bound is per caller", who: "bob"},
		{reason: "a fourth stream is over the total bound of 3, whoever opens it", who: "carol", limit: "watch_streams"},
		{reason: "bob is held to the total bound too, though under his own", who: "bob", limit: "watch_streams"},
	}
	for _, tc := range cases {
		err := open(tc.who)
		if tc.limit == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			continue
		}
		st := status.Convert(err)
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if i, ok := d.(*errdetails.ErrorInfo); ok {
				info = i
			}
		}
		if st.Code() != codes.ResourceExhausted || info.GetReason() != "LIMIT_IN_FLIGHT" || info.GetMetadata()["limit"] != tc.limit {
			t.Errorf("%s: got %v (ErrorInfo %v); want ResourceExhausted, LIMIT_IN_FLIGHT, limit %q", tc.reason, err, info, tc.limit)
		}
	}

	// An ended stream gives its slot back: once one of alice's handlers
	// has returned, carol's stream opens.
	cancels["alice"][0]()
	if who := <-ended; who != "alice" {
		t.Fatalf("ended stream of %q, want alice's", who)
	}
	if err := open("carol"); err != nil {
		t.Errorf("after alice closed a stream, carol's was refused: %v", err)
	}
}

// callerStream is a ServerStream whose context carries the caller.
type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *callerStream) Context() context.Context { return s.ctx }
