package registry

import (
	"bytes"
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

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

// grpcMethodKind is the gRPC-method kind (spec.grpc_method).
type grpcMethodKind struct{}

func (grpcMethodKind) name() string                  { return "grpc_method" }
func (grpcMethodKind) title(t *Tool) string          { return "gRPC method " + t.Spec.GRPCMethod.Method }
func (grpcMethodKind) target(t *Tool) string         { return t.Spec.GRPCMethod.Target }
func (grpcMethodKind) operatorTarget(t *Tool) string { return t.Spec.GRPCMethod.Target }
func (grpcMethodKind) line(t *Tool) string {
	return t.Spec.GRPCMethod.Target + t.Spec.GRPCMethod.Method
}

func (grpcMethodKind) check(t *Tool) (protoreflect.MethodDescriptor, *ToolError) {
	bad := func(field, reason string) *ToolError { return &ToolError{Tool: t.Name, Field: field, Reason: reason} }
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

func (grpcMethodKind) equal(a, b *BackendSpec) bool {
	ga, gb := a.GRPCMethod, b.GRPCMethod
	return ga.Target == gb.Target && ga.Method == gb.Method && bytes.Equal(ga.Descriptors, gb.Descriptors)
}

func (grpcMethodKind) hideAddress(s *BackendSpec) {
	m := *s.GRPCMethod
	m.Target = ""
	s.GRPCMethod = &m
}

// grpcMethodRecord is the stored form; descriptors are base64
// (encoding/json's []byte).
type grpcMethodRecord struct {
	Target      string `json:"target"`
	Method      string `json:"method"`
	Descriptors []byte `json:"descriptors"`
}

func (grpcMethodKind) record(s *BackendSpec) (any, error) {
	m := s.GRPCMethod
	return &grpcMethodRecord{Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}, nil
}

func (grpcMethodKind) fromRecord(raw json.RawMessage, s *BackendSpec) error {
	var r grpcMethodRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	s.GRPCMethod = &GRPCMethod{Target: r.Target, Method: r.Method, Descriptors: r.Descriptors}
	return nil
}

// fromFile refuses: a gRPC method's descriptors are binary, so such tools
// are imported, not declared.
func (grpcMethodKind) fromFile(json.RawMessage, *BackendSpec) (string, error) {
	return "spec.grpc_method: gRPC-method tools are imported, not declared (flowdropctl tools import grpc)", nil
}
