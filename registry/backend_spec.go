package registry

import (
	"bytes"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// BackendSpec is a typed backend, for a service that does not implement
// ToolBackendService. Exactly one kind is set.
type BackendSpec struct {
	GRPCMethod    *GRPCMethod
	HTTPOperation *HTTPOperation
	MCPTool       *MCPTool // mcp_tool.go
	// TLS is transport security to the backend, whatever the kind
	// (transport_security.go); nil: the gateway's per-target settings.
	TLS *TransportSecurity
}

// GRPCMethod is a unary method of any gRPC service: the tool's arguments
// are its request message (proto3 JSON mapping), its response message is
// the tool's result.
type GRPCMethod struct {
	// Target is the gRPC dial target (as Tool.Backend).
	Target string
	// Method is the full method name, "/package.Service/Method".
	Method string
	// Descriptors is a serialized google.protobuf.FileDescriptorSet holding
	// the service's file and every file it imports. Stored with the
	// revision, so calls need no server reflection.
	Descriptors []byte
}

// Target is where the tool's calls go, whatever its kind: the gRPC dial
// target (ToolBackendService, a gRPC method), the HTTP operation's base URL,
// or the upstream MCP server's URL (stdio://NAME for a stdio server). For
// the operator's log lines and the backend pools, never for a caller.
func (t Tool) Target() string {
	switch {
	case t.Spec != nil && t.Spec.GRPCMethod != nil:
		return t.Spec.GRPCMethod.Target
	case t.Spec != nil && t.Spec.HTTPOperation != nil:
		return t.Spec.HTTPOperation.BaseURL
	case t.Spec != nil && t.Spec.MCPTool != nil:
		return t.Spec.MCPTool.URL
	}
	return t.Backend
}

func sameSpec(a, b *BackendSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !sameTLS(a.TLS, b.TLS) || !sameHTTPOperation(a.HTTPOperation, b.HTTPOperation) {
		return false
	}
	if ma, mb := a.MCPTool, b.MCPTool; ma != nil || mb != nil {
		return ma != nil && mb != nil && *ma == *mb && a.GRPCMethod == nil && b.GRPCMethod == nil
	}
	ga, gb := a.GRPCMethod, b.GRPCMethod
	if ga == nil || gb == nil {
		return ga == gb
	}
	return ga.Target == gb.Target && ga.Method == gb.Method && bytes.Equal(ga.Descriptors, gb.Descriptors)
}

// checkBackend admits the tool's backend: exactly one of Backend and Spec,
// and a gRPC method resolved against its own descriptors (nil for a
// ToolBackendService backend).
func checkBackend(t Tool) (protoreflect.MethodDescriptor, *ToolError) {
	bad := func(field, reason string) *ToolError { return &ToolError{Tool: t.Name, Field: field, Reason: reason} }
	switch {
	case t.Spec == nil:
		if r := ValidateBackend(t.Backend); r != "" {
			return nil, bad("backend", r)
		}
		return nil, nil
	case t.Backend != "":
		return nil, bad("backend", "must be empty when spec is set: set exactly one of backend and spec")
	case specKinds(t.Spec) > 1:
		return nil, bad("spec", "names two backend kinds: set exactly one of grpc_method, http_operation and mcp_tool")
	case specKinds(t.Spec) == 0:
		return nil, bad("spec", "names no backend kind: set grpc_method, http_operation or mcp_tool")
	}
	if t.Spec.TLS != nil {
		if field, r := t.Spec.TLS.check(); r != "" {
			return nil, bad("spec.tls"+field, r)
		}
	}
	switch {
	case t.Spec.HTTPOperation != nil:
		return nil, checkHTTPOperation(t.Name, t.Spec.HTTPOperation)
	case t.Spec.MCPTool != nil:
		if te := checkMCPTool(t.Name, t.Spec.MCPTool, t.Spec); te != nil {
			return nil, te
		}
		return nil, nil
	}
	m := t.Spec.GRPCMethod
	if r := ValidateBackend(m.Target); r != "" {
		return nil, bad("spec.grpc_method.target", r)
	}
	md, reason := ResolveGRPCMethod(m.Method, m.Descriptors)
	if reason != "" {
		field := "spec.grpc_method.descriptors"
		if strings.HasPrefix(reason, "method ") {
			field = "spec.grpc_method.method"
		}
		return nil, bad(field, reason)
	}
	return md, nil
}

// ResolveGRPCMethod finds method ("/package.Service/Method") in a
// serialized FileDescriptorSet and checks it is unary. It returns a reason
// ("method …" when the name is at fault) when it cannot.
func ResolveGRPCMethod(method string, descriptors []byte) (protoreflect.MethodDescriptor, string) {
	svc, name, ok := SplitMethodName(method)
	if !ok {
		return nil, fmt.Sprintf("method %q must be a full method name, \"/package.Service/Method\"", method)
	}
	if len(descriptors) == 0 {
		return nil, "is required: a serialized google.protobuf.FileDescriptorSet with the service's file and its imports"
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptors, &set); err != nil {
		return nil, fmt.Sprintf("is not a serialized google.protobuf.FileDescriptorSet: %v", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Sprintf("do not resolve (every imported file must be in the set): %v", err)
	}
	d, err := files.FindDescriptorByName(svc)
	if err != nil {
		return nil, fmt.Sprintf("method %q: service %s is not in the descriptors", method, svc)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Sprintf("method %q: %s is not a service", method, svc)
	}
	md := sd.Methods().ByName(name)
	if md == nil {
		return nil, fmt.Sprintf("method %q: service %s has no method %s", method, svc, name)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Sprintf("method %q is streaming; only unary methods can be tools", method)
	}
	return md, ""
}

// SplitMethodName splits "/package.Service/Method" into its service and
// method names, reporting whether both are valid protobuf names.
func SplitMethodName(method string) (protoreflect.FullName, protoreflect.Name, bool) {
	rest, ok := strings.CutPrefix(method, "/")
	if !ok {
		return "", "", false
	}
	s, m, ok := strings.Cut(rest, "/")
	svc, name := protoreflect.FullName(s), protoreflect.Name(m)
	return svc, name, ok && svc.IsValid() && name.IsValid()
}

// specKinds counts the backend kinds a spec names (exactly one is right).
func specKinds(s *BackendSpec) int {
	n := 0
	for _, set := range []bool{s.GRPCMethod != nil, s.HTTPOperation != nil, s.MCPTool != nil} {
		if set {
			n++
		}
	}
	return n
}
