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

// SpecFromProto is a Tool.spec as the registry's type; nil stays nil. An
// empty oneof stays an empty spec, for the registry to refuse.
func SpecFromProto(p *gatewayv1.BackendSpec) *registry.BackendSpec {
	if p == nil {
		return nil
	}
	s := &registry.BackendSpec{}
	if m := p.GetGrpcMethod(); m != nil {
		s.GRPCMethod = &registry.GRPCMethod{Target: m.GetTarget(), Method: m.GetMethod(), Descriptors: m.GetDescriptors()}
	}
	if ts := p.GetTls(); ts != nil {
		s.TLS = &registry.TransportSecurity{CAFile: ts.GetCaFile(), CertFile: ts.GetCertFile(), KeyFile: ts.GetKeyFile(),
			ServerName: ts.GetServerName(), Require: ts.GetRequire()}
	}
	if h := p.GetHttpOperation(); h != nil {
		op := &registry.HTTPOperation{BaseURL: h.GetBaseUrl(), Method: h.GetMethod(), Path: h.GetPath(),
			BodyArgument: h.GetBodyArgument(), ResponseSchema: h.GetResponseSchema()}
		for _, prm := range h.GetParameters() {
			op.Parameters = append(op.Parameters, registry.HTTPParameter{Name: prm.GetName(), In: registry.HTTPIn(prm.GetIn())})
		}
		s.HTTPOperation = op
	}
	if m := p.GetMcpTool(); m != nil {
		s.MCPTool = &registry.MCPTool{URL: m.GetUrl(), Tool: m.GetTool(), CredentialEnv: m.GetCredentialEnv(), CredentialFile: m.GetCredentialFile()}
	}
	return s
}

// SpecProto is a stored spec for a response (the descriptor bytes shared:
// stored tools are read-only).
func SpecProto(s *registry.BackendSpec) *gatewayv1.BackendSpec {
	if s == nil {
		return nil
	}
	p := &gatewayv1.BackendSpec{}
	if m := s.GRPCMethod; m != nil {
		p.Kind = &gatewayv1.BackendSpec_GrpcMethod{GrpcMethod: &gatewayv1.GrpcMethod{
			Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}}
	}
	if ts := s.TLS; ts != nil {
		p.Tls = &gatewayv1.TransportSecurity{CaFile: ts.CAFile, CertFile: ts.CertFile, KeyFile: ts.KeyFile,
			ServerName: ts.ServerName, Require: ts.Require}
	}
	if h := s.HTTPOperation; h != nil {
		hp := &gatewayv1.HttpOperation{BaseUrl: h.BaseURL, Method: h.Method, Path: h.Path,
			BodyArgument: h.BodyArgument, ResponseSchema: h.ResponseSchema}
		for _, prm := range h.Parameters {
			hp.Parameters = append(hp.Parameters, &gatewayv1.HttpParameter{Name: prm.Name, In: gatewayv1.HttpParameterIn(prm.In)})
		}
		p.Kind = &gatewayv1.BackendSpec_HttpOperation{HttpOperation: hp}
	}
	if m := s.MCPTool; m != nil {
		p.Kind = &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{
			Url: m.URL, Tool: m.Tool, CredentialEnv: m.CredentialEnv, CredentialFile: m.CredentialFile}}
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
