package backend

import (
	"context"

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
		return k.HTTPOperation.Invoke(ctx, c)
	}
	if c.Entry != nil && c.Entry.Tool.Spec != nil && c.Entry.Tool.Spec.MCPTool != nil {
		return k.MCPUpstream.Invoke(ctx, c)
	}
	return k.ToolService.Invoke(ctx, c)
}
