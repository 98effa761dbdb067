package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/idempotency"
	"github.com/flowdrop/gateway/server"
)

// TestShutdownSettlesKeyedRuns: a keyed call whose caller gave up runs on
// in the gateway; shutting down lets it finish within the grace and stores
// its outcome, and past the grace cancels it and releases its key, so the
// key is free after the restart instead of held by a claim until its lease
// (--max-call-timeout + 30 s) ends. The bbolt store (real file) is read
// after the gateway is gone.
func TestShutdownSettlesKeyedRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reason string
		backend      time.Duration // how long the tool takes
		grace        time.Duration
		wantEnded    string // how the backend's call ended
		wantEntries  int    // idempotency entries left in the file
	}{
		{"finishes", "the run ends within the grace: its outcome is stored", 300 * time.Millisecond, 5 * time.Second, "answered", 1},
		{"cancelled", "the run outlasts the grace: cancelled, its key released", time.Minute, 300 * time.Millisecond, "cancelled", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ended := make(chan string, 1)
			arrived := make(chan struct{}, 1)
			env := gatewaytest.Start(t,
				gatewaytest.WithConfig(func(c *server.Config) { c.Store.Kind, c.Store.DataDir = server.StoreBolt, dir }),
				gatewaytest.WithTool(gatewaytest.ObjectTool("slow")),
				gatewaytest.WithBackendHandler("slow", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
					arrived <- struct{}{}
					select {
					case <-time.After(tc.backend):
						ended <- "answered"
						return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("done")}, nil
					case <-ctx.Done():
						ended <- "cancelled"
						return nil, ctx.Err()
					}
				}))
			// The caller gives up once the backend has the call (not on a
			// timer: on a loaded machine a short deadline can end before
			// the call is forwarded at all).
			cctx, cancel := context.WithCancel(context.Background())
			called := make(chan error, 1)
			go func() {
				_, err := env.Client.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: "slow", Arguments: &structpb.Struct{}, IdempotencyKey: "k-1"})
				called <- err
			}()
			select {
			case <-arrived:
			case err := <-called:
				cancel()
				t.Fatalf("the keyed call ended before reaching the backend: %v", err)
			case <-time.After(10 * time.Second):
				cancel()
				t.Fatal("the keyed call never reached the backend")
			}
			cancel()
			if err := <-called; status.Code(err) != codes.Canceled {
				t.Fatalf("the keyed call: %v; want the caller's Canceled (the run goes on)", err)
			}
			sctx, cancel := context.WithTimeout(context.Background(), tc.grace)
			env.Gateway.Close(sctx)
			cancel()
			select {
			case how := <-ended:
				if how != tc.wantEnded {
					t.Errorf("the backend's call %s; want %s (%s)", how, tc.wantEnded, tc.reason)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the backend's call did not end (%s)", tc.reason)
			}
			s, err := idempotency.OpenBolt(filepath.Join(dir, server.IdempotencyFileName), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n := s.Len(); n != tc.wantEntries {
				t.Errorf("%d idempotency entries in the file after shutdown; want %d (%s)", n, tc.wantEntries, tc.reason)
			}
		})
	}
}
