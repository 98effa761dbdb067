package server

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/types/known/structpb"
)

// call is the state of one tool call as it moves through the pipeline. The
// transport adapter (gRPC now, MCP later) builds it; each stage reads and
// fills its part. It is owned by one goroutine.
type call struct {
	tool   string
	args   *structpb.Struct // the model's arguments; after normalize, the normalized ones
	callID string
	caller *gatewayv1.Caller

	entry  *registry.Entry  // set by normalize (the lookup)
	report normalize.Report // set by normalize

	pol callPolicy // audit and policy state (policy.go)

	// raw is the request as received when it came undecoded (rawpath.go);
	// it rides here rather than in its own context value, so a call adds
	// one context node, not one per piece of state.
	raw *rawInvokeToolRequest
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// callFrom returns the call the normalization stage put in ctx, or nil.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// callerFromContext is THE one place a call's caller identity is decided:
// the policy.Caller the authentication interceptor (or, for MCP, the HTTP
// authentication) put in ctx. Without one — only a pipeline built without a
// policy, as in unit tests; New always authenticates — the caller is anonymous.
func callerFromContext(ctx context.Context) *gatewayv1.Caller {
	if c, ok := policy.CallerFrom(ctx); ok {
		return callerProto(c)
	}
	return &gatewayv1.Caller{Subject: "anonymous", Method: policy.MethodNone}
}
