package server_test

import (
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRegistryCallsHaveTheirOwnRateLimit: registry calls do not share the
// invocation buckets. With tool calls limited to one per caller per ~16
// minutes, paging ListTools two tools at a time, over and over, is never
// refused (the registry's default bucket is generous), and it spends no
// invocation token; rate_limit.registry sets the registry's own bucket,
// which refuses with RetryInfo without touching the invocation bucket.
func TestRegistryCallsHaveTheirOwnRateLimit(t *testing.T) {
	t.Parallel()
	invokeOnce := policy.RateLimitConfig{Rate: 0.001, Burst: 1}
	cases := []struct {
		name, reason string
		limit        policy.RateLimitConfig
		pagesOK      int // ListTools calls that must succeed; the next is refused when refusedAfter
		refusedAfter bool
	}{
		{"default-registry-bucket", "paging 10 listings (20 calls) fits the default registry bucket; the tight invocation limit does not apply",
			invokeOnce, 20, false},
		{"own-registry-bucket", "rate_limit.registry {rate, burst} is the registry's own limit: the third call is refused",
			policy.RateLimitConfig{Rate: 0.001, Burst: 1, Registry: policy.MethodRate{Rate: 0.001, Burst: 2}}, 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPolicy(nil)
			p.RateLimit = tc.limit
			env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
			reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
			ctx := withKey(keyInvoker)
			calls := 0
			for calls < tc.pagesOK {
				req := &gatewayv1.ListToolsRequest{PageSize: 2}
				for calls < tc.pagesOK {
					resp, err := reg.ListTools(ctx, req)
					calls++
					if err != nil {
						t.Fatalf("ListTools call %d: %v (%s)", calls, err, tc.reason)
					}
					if resp.GetNextPageToken() == "" {
						break
					}
					req.PageToken = resp.GetNextPageToken()
				}
			}
			if tc.refusedAfter {
				_, err := reg.ListTools(ctx, &gatewayv1.ListToolsRequest{PageSize: 2})
				if status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("ListTools past the registry burst: %v, want ResourceExhausted (%s)", err, tc.reason)
				}
				var retry bool
				for _, d := range status.Convert(err).Details() {
					_, ok := d.(*errdetails.RetryInfo)
					retry = retry || ok
				}
				if !retry {
					t.Errorf("registry refusal without RetryInfo: %v", status.Convert(err).Details())
				}
			}
			// The invocation bucket is untouched by the registry calls.
			if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note",
				Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}); err != nil {
				t.Errorf("first InvokeTool after the registry calls: %v; registry calls must not spend invocation tokens", err)
			}
		})
	}
}
