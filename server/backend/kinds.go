package backend

import (
	"context"
	"errors"

	"github.com/flowdrop/gateway/server/pipeline"
)

// Kinds is the pipeline's backend: it carries a call out through the kind
// its tool's backend is (registry.Tool.Spec), a ToolBackendService target
// when there is no spec. The kinds share one connection pool.
type Kinds struct {
	ToolService   *ToolService
	GRPCMethod    *GRPCMethod
	HTTPOperation *HTTPOperation
	MCPUpstream   *MCPUpstream
}

// NewKinds is every kind over ts's connections.
func NewKinds(ts *ToolService) *Kinds {
	return &Kinds{ToolService: ts, GRPCMethod: NewGRPCMethod(ts), HTTPOperation: NewHTTPOperation(ts), MCPUpstream: NewMCPUpstream(ts)}
}

// Close releases what the kinds hold besides ts's connections: the HTTP
// kind's idle connections, the MCP upstream sessions.
func (k *Kinds) Close() {
	k.HTTPOperation.Close()
	k.MCPUpstream.Close()
}

// Invoke dispatches by the tool's kind; the entry's resolved method marks
// a gRPC-method tool.
func (k *Kinds) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	if c.Entry != nil && c.Entry.Method != nil {
		return k.GRPCMethod.Invoke(ctx, c)
	}
	if c.Entry != nil && c.Entry.Tool.Spec != nil && c.Entry.Tool.Spec.HTTPOperation != nil {
		return invokeRetrying(ctx, c, k.HTTPOperation.Invoke)
	}
	if c.Entry != nil && c.Entry.Tool.Spec != nil && c.Entry.Tool.Spec.MCPTool != nil {
		return invokeRetrying(ctx, c, k.MCPUpstream.Invoke)
	}
	return k.ToolService.Invoke(ctx, c) // retries inside, per attempt of its pooled call
}

// invokeRetrying calls invoke once, and again (retry.go's rule: idempotent
// tools only, on Unavailable only, bounded, within the deadline) for a tool
// marked idempotent.
func invokeRetrying(ctx context.Context, c *pipeline.Call, invoke func(context.Context, *pipeline.Call) (pipeline.Result, error)) (pipeline.Result, error) {
	res, err := invoke(ctx, c)
	if !c.Entry.Tool.Idempotent() {
		return res, err
	}
	for attempt := 1; attempt < retryAttempts && isUnavailable(err) && retryWait(ctx, attempt); attempt++ {
		res, err = invoke(ctx, c)
	}
	return res, err
}

func isUnavailable(err error) bool {
	var e *pipeline.Error
	return errors.As(err, &e) && e.Code == pipeline.Unavailable
}
