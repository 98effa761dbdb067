// Package toolproto converts the registry's Tool to and from the
// contract's (flowdrop.gateway.v1.Tool): the one converter, used by the gRPC
// registry API and by flowdropctl's tools files, so every field a tools file
// defines reaches the gateway.
package toolproto

import (
	"maps"

	"google.golang.org/protobuf/types/known/durationpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// FromProto is p as the registry's type. It checks only what the registry
// cannot see after conversion (a malformed Duration); everything else is
// the registry's to judge. p must not be nil.
func FromProto(p *gatewayv1.Tool) (registry.Tool, error) {
	t := registry.Tool{
		Name:            p.GetName(),
		Description:     p.GetDescription(),
		InputSchema:     p.GetInputSchema(),
		Backend:         p.GetBackend(),
		Labels:          maps.Clone(p.GetLabels()),
		Spec:            SpecFromProto(p.GetSpec()),
		Annotations:     AnnotationsFromProto(p.GetAnnotations()),
		MaxResultBytes:  p.GetMaxResultBytes(),
		OutputSchema:    p.GetOutputSchema(),
		OnInvalidOutput: p.GetOnInvalidOutput(),
	}
	// edited and pending are the registry's to say (output only).
	if o := p.GetOrigin(); o != nil {
		t.Origin = &registry.Origin{MCPUpstream: o.GetMcpUpstream(), UpstreamDigest: o.GetUpstreamDigest()}
	}
	if d := p.GetTimeout(); d != nil {
		if err := d.CheckValid(); err != nil {
			return registry.Tool{}, &registry.ToolError{Tool: t.Name, Field: "timeout", Reason: err.Error()}
		}
		t.Timeout = d.AsDuration()
	}
	return t, nil
}

// ToProto is t in the contract's type. The schema is shared, not copied:
// stored tools are read-only and marshalling only reads it.
func ToProto(t registry.Tool) *gatewayv1.Tool {
	p := &gatewayv1.Tool{
		Name:            t.Name,
		Description:     t.Description,
		InputSchema:     t.InputSchema,
		Backend:         t.Backend,
		Revision:        t.Revision,
		Labels:          maps.Clone(t.Labels),
		Spec:            SpecProto(t.Spec),
		Annotations:     AnnotationsProto(t.Annotations),
		MaxResultBytes:  t.MaxResultBytes,
		OutputSchema:    t.OutputSchema,
		OnInvalidOutput: t.OnInvalidOutput,
	}
	if t.Timeout != 0 {
		p.Timeout = durationpb.New(t.Timeout)
	}
	if o := t.Origin; o != nil {
		p.Origin = &gatewayv1.ToolOrigin{McpUpstream: o.MCPUpstream, UpstreamDigest: o.UpstreamDigest, Edited: t.Edited()}
		if t.Pending != nil {
			p.Origin.Pending, _ = registry.ChangeKinds(t, *t.Pending)
		}
	}
	return p
}

// AnnotationsFromProto is Tool.annotations as the registry's type; nil
// stays nil, an unset hint stays unset.
func AnnotationsFromProto(p *gatewayv1.ToolAnnotations) *registry.ToolAnnotations {
	if p == nil {
		return nil
	}
	return &registry.ToolAnnotations{ReadOnlyHint: p.ReadOnlyHint, DestructiveHint: p.DestructiveHint,
		IdempotentHint: p.IdempotentHint, OpenWorldHint: p.OpenWorldHint}
}

// AnnotationsProto is stored annotations for a response (the hints are
// shared: stored tools are read-only).
func AnnotationsProto(a *registry.ToolAnnotations) *gatewayv1.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &gatewayv1.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}
