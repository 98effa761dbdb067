package registry

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// checkBackend admits the tool's backend: exactly one of Backend and Spec,
// a spec of exactly one known kind, admitted by that kind (a gRPC method
// resolves against its own descriptors; the descriptor is nil for other
// kinds).
func checkBackend(t Tool) (protoreflect.MethodDescriptor, *ToolError) {
	bad := func(field, reason string) *ToolError { return &ToolError{Tool: t.Name, Field: field, Reason: reason} }
	if t.Spec != nil && t.Backend != "" {
		return nil, bad("backend", "must be empty when spec is set: set exactly one of backend and spec")
	}
	k, err := KindOf(&t)
	if err != nil {
		return nil, bad("spec", err.(*UnknownKindError).Reason)
	}
	if t.Spec != nil && t.Spec.TLS != nil {
		if field, r := t.Spec.TLS.check(); r != "" {
			return nil, bad("spec.tls"+field, r)
		}
	}
	return backendKinds[k].check(&t)
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
