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
	if m := s.MCPTool; m != nil {
		p.Kind = &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{
			Url: m.URL, Tool: m.Tool, CredentialEnv: m.CredentialEnv, CredentialFile: m.CredentialFile}}
	}
	return p
}

// hideSpecTarget clears a response tool's typed backend's target (and an
// upstream MCP tool's URL and credential references), for a caller who
// does not see backends (the spec is toolProto's own copy).
func hideSpecTarget(p *gatewayv1.Tool) {
	if m := p.GetSpec().GetGrpcMethod(); m != nil {
		m.Target = ""
	}
	if m := p.GetSpec().GetMcpTool(); m != nil {
		m.Url, m.CredentialEnv, m.CredentialFile = "", "", ""
	}
}
