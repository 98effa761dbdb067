package grpcapi

import (
	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// specFromProto is a Tool.spec as the registry's type; nil stays nil. An
// empty oneof stays an empty spec, for the registry to refuse.
func specFromProto(p *gatewayv1.BackendSpec) *registry.BackendSpec {
	if p == nil {
		return nil
	}
	s := &registry.BackendSpec{}
	if m := p.GetGrpcMethod(); m != nil {
		s.GRPCMethod = &registry.GRPCMethod{Target: m.GetTarget(), Method: m.GetMethod(), Descriptors: m.GetDescriptors()}
	}
	if h := p.GetHttpOperation(); h != nil {
		op := &registry.HTTPOperation{BaseURL: h.GetBaseUrl(), Method: h.GetMethod(), Path: h.GetPath(),
			BodyArgument: h.GetBodyArgument(), ResponseSchema: h.GetResponseSchema()}
		for _, prm := range h.GetParameters() {
			op.Parameters = append(op.Parameters, registry.HTTPParameter{Name: prm.GetName(), In: registry.HTTPIn(prm.GetIn())})
		}
		s.HTTPOperation = op
	}
	return s
}

// specProto is a stored spec for a response (the descriptor bytes shared:
// stored tools are read-only).
func specProto(s *registry.BackendSpec) *gatewayv1.BackendSpec {
	if s == nil {
		return nil
	}
	p := &gatewayv1.BackendSpec{}
	if m := s.GRPCMethod; m != nil {
		p.Kind = &gatewayv1.BackendSpec_GrpcMethod{GrpcMethod: &gatewayv1.GrpcMethod{
			Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}}
	}
	if h := s.HTTPOperation; h != nil {
		hp := &gatewayv1.HttpOperation{BaseUrl: h.BaseURL, Method: h.Method, Path: h.Path,
			BodyArgument: h.BodyArgument, ResponseSchema: h.ResponseSchema}
		for _, prm := range h.Parameters {
			hp.Parameters = append(hp.Parameters, &gatewayv1.HttpParameter{Name: prm.Name, In: gatewayv1.HttpParameterIn(prm.In)})
		}
		p.Kind = &gatewayv1.BackendSpec_HttpOperation{HttpOperation: hp}
	}
	return p
}

// hideSpecTarget clears a response tool's typed backend's target, for a
// caller who does not see backends (the spec is toolProto's own copy).
func hideSpecTarget(p *gatewayv1.Tool) {
	if m := p.GetSpec().GetGrpcMethod(); m != nil {
		m.Target = ""
	}
	if h := p.GetSpec().GetHttpOperation(); h != nil {
		h.BaseUrl = ""
	}
}
