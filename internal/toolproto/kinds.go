package toolproto

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
)

// The contract's BackendSpec kind oneof ↔ the registry's kinds: the one
// place that maps a oneof member to a registry.Kind (registry/kinds.go
// lists what a new kind touches). TestEveryKindConverts fails when a
// registry kind has no row here.

// SpecFromProto is a Tool.spec as the registry's type; nil stays nil. An
// empty oneof, or a member this build does not know, is an empty spec, for
// the registry to refuse (registry.KindOf's *UnknownKindError).
func SpecFromProto(p *gatewayv1.BackendSpec) *registry.BackendSpec {
	if p == nil {
		return nil
	}
	s := &registry.BackendSpec{}
	if ts := p.GetTls(); ts != nil {
		s.TLS = &registry.TransportSecurity{CAFile: ts.GetCaFile(), CertFile: ts.GetCertFile(), KeyFile: ts.GetKeyFile(),
			ServerName: ts.GetServerName(), Require: ts.GetRequire()}
	}
	switch k := p.GetKind().(type) {
	case *gatewayv1.BackendSpec_GrpcMethod:
		m := k.GrpcMethod
		s.GRPCMethod = &registry.GRPCMethod{Target: m.GetTarget(), Method: m.GetMethod(), Descriptors: m.GetDescriptors()}
	case *gatewayv1.BackendSpec_HttpOperation:
		h := k.HttpOperation
		op := &registry.HTTPOperation{BaseURL: h.GetBaseUrl(), Method: h.GetMethod(), Path: h.GetPath(),
			BodyArgument: h.GetBodyArgument(), ResponseSchema: h.GetResponseSchema()}
		for _, prm := range h.GetParameters() {
			op.Parameters = append(op.Parameters, registry.HTTPParameter{Name: prm.GetName(), In: registry.HTTPIn(prm.GetIn())})
		}
		s.HTTPOperation = op
	case *gatewayv1.BackendSpec_McpTool:
		m := k.McpTool
		s.MCPTool = &registry.MCPTool{URL: m.GetUrl(), Tool: m.GetTool(), CredentialEnv: m.GetCredentialEnv(), CredentialFile: m.GetCredentialFile(),
			Transport: MCPTransport(m.GetTransport())}
	case *gatewayv1.BackendSpec_Alias:
		a := k.Alias
		s.Alias = &registry.Alias{Target: a.GetTarget(), Injected: a.GetInjectedArguments()}
		if f := a.GetFixedArguments(); f != nil {
			s.Alias.Fixed = f.AsMap()
		}
	}
	return s
}

// SpecProto is a stored spec for a response (the descriptor bytes shared:
// stored tools are read-only). A spec of no known kind (never stored: the
// registry refuses it) has no oneof member.
func SpecProto(s *registry.BackendSpec) *gatewayv1.BackendSpec {
	if s == nil {
		return nil
	}
	p := &gatewayv1.BackendSpec{}
	if ts := s.TLS; ts != nil {
		p.Tls = &gatewayv1.TransportSecurity{CaFile: ts.CAFile, CertFile: ts.CertFile, KeyFile: ts.KeyFile,
			ServerName: ts.ServerName, Require: ts.Require}
	}
	k, err := registry.KindOf(&registry.Tool{Spec: s})
	if err != nil {
		return p
	}
	switch k {
	case registry.KindGRPCMethod:
		m := s.GRPCMethod
		p.Kind = &gatewayv1.BackendSpec_GrpcMethod{GrpcMethod: &gatewayv1.GrpcMethod{
			Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}}
	case registry.KindHTTPOperation:
		h := s.HTTPOperation
		hp := &gatewayv1.HttpOperation{BaseUrl: h.BaseURL, Method: h.Method, Path: h.Path,
			BodyArgument: h.BodyArgument, ResponseSchema: h.ResponseSchema}
		for _, prm := range h.Parameters {
			hp.Parameters = append(hp.Parameters, &gatewayv1.HttpParameter{Name: prm.Name, In: gatewayv1.HttpParameterIn(prm.In)})
		}
		p.Kind = &gatewayv1.BackendSpec_HttpOperation{HttpOperation: hp}
	case registry.KindMCPTool:
		m := s.MCPTool
		p.Kind = &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{
			Url: m.URL, Tool: m.Tool, CredentialEnv: m.CredentialEnv, CredentialFile: m.CredentialFile, Transport: MCPTransportProto(m.Transport)}}
	case registry.KindAlias:
		a := s.Alias
		ap := &gatewayv1.ToolAlias{Target: a.Target, InjectedArguments: a.Injected}
		if len(a.Fixed) > 0 {
			// Stored values are JSON (decoded by encoding/json or AsMap), which
			// always converts.
			ap.FixedArguments, _ = structpb.NewStruct(a.Fixed)
		}
		p.Kind = &gatewayv1.BackendSpec_Alias{Alias: ap}
	}
	return p
}

// MCPTransport is the registry's name of a proto transport; a number this
// build does not know is kept as a name admission refuses ("unknown(N)"),
// never read as detection.
func MCPTransport(t gatewayv1.McpTransport) registry.MCPTransport {
	switch t {
	case gatewayv1.McpTransport_MCP_TRANSPORT_UNSPECIFIED:
		return registry.MCPTransportDetect
	case gatewayv1.McpTransport_MCP_TRANSPORT_STREAMABLE_HTTP:
		return registry.MCPTransportStreamable
	case gatewayv1.McpTransport_MCP_TRANSPORT_SSE:
		return registry.MCPTransportSSE
	}
	return registry.MCPTransport(fmt.Sprintf("unknown(%d)", int32(t)))
}

// MCPTransportProto is the proto transport of an admitted registry one.
func MCPTransportProto(t registry.MCPTransport) gatewayv1.McpTransport {
	switch t {
	case registry.MCPTransportStreamable:
		return gatewayv1.McpTransport_MCP_TRANSPORT_STREAMABLE_HTTP
	case registry.MCPTransportSSE:
		return gatewayv1.McpTransport_MCP_TRANSPORT_SSE
	}
	return gatewayv1.McpTransport_MCP_TRANSPORT_UNSPECIFIED
}
