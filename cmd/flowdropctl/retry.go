package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Retrying on the gateway's RetryInfo: a refusal that says when to come back
// (a rate limit; audit briefly unavailable) is retried after that delay, a
// bounded number of times, never past the command's deadline. A refusal
// without RetryInfo is final: the gateway adds it only when nothing ran, so
// a retry cannot repeat a tool's effects.
const (
	maxRetries    = 5
	maxRetryDelay = 10 * time.Second
)

// retryOnRetryInfo is the unary client interceptor doing it; each wait is
// noted on stderr.
func retryOnRetryInfo(stderr io.Writer) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		for attempt := 0; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, opts...)
			delay, ok := retryDelay(err)
			if !ok || attempt == maxRetries {
				return err
			}
			if dl, has := ctx.Deadline(); has && time.Until(dl) < delay {
				return err // waiting would outlast --timeout: say why now
			}
			fmt.Fprintf(stderr, "note: %s; retrying in %v (%d/%d)\n", status.Code(err), delay.Round(time.Millisecond), attempt+1, maxRetries)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
}

// retryDelay is the RetryInfo delay of a ResourceExhausted or Unavailable
// status, capped at maxRetryDelay.
func retryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || (st.Code() != codes.ResourceExhausted && st.Code() != codes.Unavailable) {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return min(max(ri.GetRetryDelay().AsDuration(), 0), maxRetryDelay), true
		}
	}
	return 0, false
}
