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

// hideSpecTarget clears a response tool's typed backend's target (an HTTP
// operation's base URL, an upstream MCP tool's URL and credential
// references) and its TLS file paths (the gateway's disk), for a caller
// who does not see backends (the spec is toolProto's own copy). That TLS
// is required stays.
func hideSpecTarget(p *gatewayv1.Tool) {
	if ts := p.GetSpec().GetTls(); ts != nil {
		p.Spec.Tls = &gatewayv1.TransportSecurity{Require: true}
	}
	if m := p.GetSpec().GetGrpcMethod(); m != nil {
		m.Target = ""
	}
	if h := p.GetSpec().GetHttpOperation(); h != nil {
		h.BaseUrl = ""
	}
	if m := p.GetSpec().GetMcpTool(); m != nil {
		m.Url, m.CredentialEnv, m.CredentialFile = "", "", ""
	}
}

// annotationsFromProto is Tool.annotations as the registry's type; nil
// stays nil, an unset hint stays unset.
func annotationsFromProto(p *gatewayv1.ToolAnnotations) *registry.ToolAnnotations {
	if p == nil {
		return nil
	}
	return &registry.ToolAnnotations{ReadOnlyHint: p.ReadOnlyHint, DestructiveHint: p.DestructiveHint,
		IdempotentHint: p.IdempotentHint, OpenWorldHint: p.OpenWorldHint}
}

// annotationsProto is stored annotations for a response (the hints are
// shared: stored tools are read-only).
func annotationsProto(a *registry.ToolAnnotations) *gatewayv1.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &gatewayv1.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}
