package loadgen

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// TestSlowBackend calls a SlowBackend over real gRPC on 127.0.0.1 and
// checks, on both sides of the wire, that it answers only after its delay
// and that a call ending first (deadline, cancel) ends its handler at once
// with the matching code: the in-flight phase relies on both.
func TestSlowBackend(t *testing.T) {
	const delay = 400 * time.Millisecond
	// The handler's own outcome, seen by a server interceptor: the client
	// gives up at its deadline whatever the server does, so only this shows
	// the backend stopped waiting.
	type ended struct {
		code codes.Code
		took time.Duration
	}
	handled := make(chan ended, 1)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		t0 := time.Now()
		resp, err := h(ctx, req)
		handled <- ended{status.Code(err), time.Since(t0)}
		return resp, err
	}))
	gatewayv1.RegisterToolBackendServiceServer(srv, NewSlowBackend(delay))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := gatewayv1.NewToolBackendServiceClient(cc)
	req := &gatewayv1.InvokeRequest{Tool: BenchTool}
	serverSide := func(t *testing.T) ended {
		t.Helper()
		select {
		case e := <-handled:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("the handler never returned")
			return ended{}
		}
	}

	t.Run("answers after the delay", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t0 := time.Now()
		resp, err := client.Invoke(ctx, req)
		took := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetResult().GetStructValue().GetFields()["status"].GetStringValue(); got != "ok" {
			t.Errorf("result status %q, want ok: the delay must not change the answer", got)
		}
		if took < delay {
			t.Errorf("call took %v, want ≥ the %v delay", took, delay)
		}
		if e := serverSide(t); e.code != codes.OK || e.took < delay {
			t.Errorf("handler ended %v after %v, want OK after ≥ %v", e.code, e.took, delay)
		}
	})

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want codes.Code
		// The handler's code: for a deadline, the server's copy of it
		// (from grpc-timeout) and the client's RST_STREAM when its own
		// copy fires race, so the handler may see either.
		server []codes.Code
	}{
		{"deadline shorter than the delay", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, codes.DeadlineExceeded, []codes.Code{codes.DeadlineExceeded, codes.Canceled}},
		{"cancelled during the delay", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			stop := time.AfterFunc(30*time.Millisecond, cancel)
			return ctx, func() { stop.Stop(); cancel() }
		}, codes.Canceled, []codes.Code{codes.Canceled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			t0 := time.Now()
			_, err := client.Invoke(ctx, req)
			took := time.Since(t0)
			if status.Code(err) != tc.want {
				t.Fatalf("client got %v, want %v", err, tc.want)
			}
			if took >= delay {
				t.Errorf("client waited %v, want < the %v delay", took, delay)
			}
			// The backend must stop waiting too, not hold the stream for
			// the rest of its delay.
			if e := serverSide(t); !slices.Contains(tc.server, e.code) || e.took >= delay {
				t.Errorf("handler ended %v after %v, want one of %v before the %v delay", e.code, e.took, tc.server, delay)
			}
		})
	}
}
