package loadgen

import (
	"context"
	"time"

	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// SlowBackend is a Backend that answers each call only after Delay: the
// bench's in-flight memory phase (tools/bench/run.sh, INFLIGHT) needs calls
// that stay open in the gateway long enough to hold a thousand of them at
// once and read its resident memory. A timer, not a sleep, so a call whose
// caller gives up (deadline, cancel) returns at once and frees its stream.
type SlowBackend struct {
	*Backend
	Delay time.Duration
}

// NewSlowBackend returns a Backend that waits delay before each answer.
func NewSlowBackend(delay time.Duration) *SlowBackend {
	return &SlowBackend{Backend: NewBackend(), Delay: delay}
}

// Invoke implements gatewayv1.ToolBackendServiceServer: the Backend's
// answer after Delay, or the context's error (DeadlineExceeded, Canceled)
// as a gRPC status if the call ends first.
func (b *SlowBackend) Invoke(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	t := time.NewTimer(b.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return b.Backend.Invoke(ctx, req)
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}
