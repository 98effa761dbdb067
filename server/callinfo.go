package server

import (
	"context"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
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

// callerFromContext is THE one place a call's caller identity is decided.
// Authentication is not implemented yet, so every caller is anonymous; the
// authentication task replaces this function's body.
func callerFromContext(context.Context) *gatewayv1.Caller {
	return &gatewayv1.Caller{Subject: "anonymous", Method: "none"}
}
