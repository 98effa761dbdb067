package grpcapi

import (
	"maps"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/types/known/durationpb"
)

// toolFromProto converts a request's tool to the registry's type. It checks
// only what the registry cannot see after conversion (a missing tool, a
// malformed Duration); everything else is the registry's to judge.
func toolFromProto(p *gatewayv1.Tool) (registry.Tool, error) {
	if p == nil {
		return registry.Tool{}, &requestFieldError{field: "tool", reason: "is required"}
	}
	t := registry.Tool{
		Name:            p.GetName(),
		Description:     p.GetDescription(),
		InputSchema:     p.GetInputSchema(),
		Backend:         p.GetBackend(),
		Labels:          maps.Clone(p.GetLabels()),
		Spec:            specFromProto(p.GetSpec()),
		Annotations:     annotationsFromProto(p.GetAnnotations()),
		MaxResultBytes:  p.GetMaxResultBytes(),
		OutputSchema:    p.GetOutputSchema(),
		OnInvalidOutput: p.GetOnInvalidOutput(),
	}
	if d := p.GetTimeout(); d != nil {
		if err := d.CheckValid(); err != nil {
			return registry.Tool{}, &registry.ToolError{Tool: t.Name, Field: "timeout", Reason: err.Error()}
		}
		t.Timeout = d.AsDuration()
	}
	return t, nil
}

// toolProto converts a stored tool for a response. The schema is shared,
// not copied: stored tools are read-only and marshalling only reads it.
func toolProto(t registry.Tool) *gatewayv1.Tool {
	p := &gatewayv1.Tool{
		Name:            t.Name,
		Description:     t.Description,
		InputSchema:     t.InputSchema,
		Backend:         t.Backend,
		Revision:        t.Revision,
		Labels:          maps.Clone(t.Labels),
		Spec:            specProto(t.Spec),
		Annotations:     annotationsProto(t.Annotations),
		MaxResultBytes:  t.MaxResultBytes,
		OutputSchema:    t.OutputSchema,
		OnInvalidOutput: t.OnInvalidOutput,
	}
	if t.Timeout != 0 {
		p.Timeout = durationpb.New(t.Timeout)
	}
	return p
}

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
