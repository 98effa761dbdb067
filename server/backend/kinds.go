package backend

import (
	"context"
	"errors"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Kinds is the pipeline's backend: it carries a call out through the
// adapter of its tool's kind (registry.KindOf). The kinds share one
// connection pool.
type Kinds struct {
	ToolService   *ToolService
	GRPCMethod    *GRPCMethod
	HTTPOperation *HTTPOperation
	MCPUpstream   *MCPUpstream
	// adapters are the kinds' adapters, by registry.Kind (newAdapter).
	adapters []pipeline.Backend
}

// NewKinds is every kind over ts's connections.
func NewKinds(ts *ToolService) *Kinds {
	k := &Kinds{ToolService: ts, GRPCMethod: NewGRPCMethod(ts), HTTPOperation: NewHTTPOperation(ts), MCPUpstream: NewMCPUpstream(ts)}
	kinds := registry.Kinds()
	k.adapters = make([]pipeline.Backend, int(kinds[len(kinds)-1])+1)
	for _, kind := range kinds {
		k.adapters[kind] = k.newAdapter(kind)
	}
	return k
}

// newAdapter is the one switch from a registry kind to the code that
// carries its calls (registry/kinds.go lists what a new kind touches); nil
// for a kind this build does not know.
func (k *Kinds) newAdapter(kind registry.Kind) pipeline.Backend {
	switch kind {
	case registry.KindToolBackendService:
		return k.ToolService // retries inside, per attempt of its pooled call
	case registry.KindGRPCMethod:
		return k.GRPCMethod
	case registry.KindHTTPOperation:
		return retrying{k.HTTPOperation}
	case registry.KindMCPTool:
		return retrying{k.MCPUpstream}
	case registry.KindAlias:
		return unresolvedAlias{}
	}
	return nil
}

// adapter is kind's adapter; a kind without one is an
// *registry.UnknownKindError (the call fails closed: Internal, the detail
// in the cause only).
func (k *Kinds) adapter(kind registry.Kind) (pipeline.Backend, error) {
	if int(kind) < len(k.adapters) && k.adapters[kind] != nil {
		return k.adapters[kind], nil
	}
	return nil, &registry.UnknownKindError{Name: kind.String(), Reason: "the gateway has no adapter for it"}
}

// Close releases what the kinds hold besides ts's connections: the HTTP
// kind's idle connections, the MCP upstream sessions.
func (k *Kinds) Close() {
	k.HTTPOperation.Close()
	k.MCPUpstream.Close()
}

// Invoke dispatches by the tool's kind; a call without a registry entry
// goes to a ToolBackendService.
func (k *Kinds) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	kind := registry.KindToolBackendService
	if c.Entry != nil {
		var err error
		if kind, err = registry.KindOf(&c.Entry.Tool); err != nil {
			return pipeline.Result{}, err
		}
	}
	a, err := k.adapter(kind)
	if err != nil {
		return pipeline.Result{}, err
	}
	// Resolved once per call, before the first attempt: retries send the
	// same identity.
	if ctx, err = k.withIdentity(ctx, kind, c); err != nil {
		return pipeline.Result{}, err
	}
	return a.Invoke(ctx, c)
}

// retrying calls its kind once, and again (retry.go's rule: idempotent
// tools only, on Unavailable only, bounded, within the deadline) for a
// tool marked idempotent.
type retrying struct{ kind pipeline.Backend }

func (r retrying) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	res, err := r.kind.Invoke(ctx, c)
	if !c.Entry.Tool.Idempotent() {
		return res, err
	}
	for attempt := 1; attempt < retryAttempts && isUnavailable(err) && retryWait(ctx, attempt); attempt++ {
		res, err = r.kind.Invoke(ctx, c)
	}
	return res, err
}

func isUnavailable(err error) bool {
	var e *pipeline.Error
	return errors.As(err, &e) && e.Code == pipeline.Unavailable
}

// upstreamOf is the one switch from a kind to the upstream its tools'
// identity is chosen and addressed by: a URL (MCP upstream, HTTP
// operation) or a gRPC target; "" for a kind without one (the default
// mode applies).
func upstreamOf(kind registry.Kind, c *pipeline.Call) string {
	if c.Entry == nil {
		return ""
	}
	t := &c.Entry.Tool
	switch kind {
	case registry.KindToolBackendService:
		return t.Backend
	case registry.KindGRPCMethod:
		if t.Spec != nil && t.Spec.GRPCMethod != nil {
			return t.Spec.GRPCMethod.Target
		}
	case registry.KindHTTPOperation:
		if t.Spec != nil && t.Spec.HTTPOperation != nil {
			return t.Spec.HTTPOperation.BaseURL
		}
	case registry.KindMCPTool:
		if t.Spec != nil && t.Spec.MCPTool != nil {
			return t.Spec.MCPTool.URL
		}
	}
	return ""
}
