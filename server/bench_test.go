package server_test

import (
	"context"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// BenchmarkInvokeTool measures one InvokeTool round trip through the whole
// gateway (chain, normalization, validation, forwarding) to the example
// backend over loopback TCP, in parallel. Compare with a bare pass-through
// proxy (internal/bareproxy) for the gateway's own cost.
func BenchmarkInvokeTool(b *testing.B) {
	cases := []struct {
		name string
		args map[string]any
	}{
		{"clean", map[string]any{"title": "Ember & Oak", "tags": []any{"a", "b"}, "body": "hello"}},
		{"repaired", map[string]any{"title": "Ember &amp;amp; Oak", "tags": `["a","b"]`, "body": "hello"}},
	}
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording())
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(b, tc.args), CallId: "bench"}
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := env.Client.InvokeTool(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
