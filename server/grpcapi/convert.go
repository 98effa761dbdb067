package grpcapi

import (
	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
)

// toolFromProto converts a request's tool to the registry's type
// (toolproto.FromProto), refusing a missing one.
func toolFromProto(p *gatewayv1.Tool) (registry.Tool, error) {
	if p == nil {
		return registry.Tool{}, &requestFieldError{field: "tool", reason: "is required"}
	}
	return toolproto.FromProto(p)
}

// toolProto converts a stored tool for a response.
func toolProto(t registry.Tool) *gatewayv1.Tool { return toolproto.ToProto(t) }

func compatNotesProto(ns []registry.CompatNote) []*gatewayv1.CompatibilityNote {
	if len(ns) == 0 {
		return nil
	}
	out := make([]*gatewayv1.CompatibilityNote, len(ns))
	for i, n := range ns {
		out[i] = &gatewayv1.CompatibilityNote{Path: n.Path, Kind: n.Kind, Message: n.Message}
	}
	return out
}
