package grpcimport

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/protoschema"
)

// Source is a service's descriptors: the files, and the services to
// import (nil: every service the files declare).
type Source struct {
	Files    *protoregistry.Files
	Services []protoreflect.FullName
}

// FromDescriptorSet reads a serialized FileDescriptorSet, as `buf build -o`
// and `protoc --include_imports --descriptor_set_out` write it.
func FromDescriptorSet(b []byte) (*Source, error) {
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(b, set); err != nil {
		return nil, fmt.Errorf("not a serialized google.protobuf.FileDescriptorSet: %w", err)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("the descriptors do not resolve (built without --include_imports?): %w", err)
	}
	return &Source{Files: files}, nil
}

// Options choose what is imported and how it is named.
type Options struct {
	// Target is the service's gRPC dial target, stored in every tool.
	Target string
	// Service and Method, when set, import only that service (full or
	// unqualified name) and method (name).
	Service, Method string
	// Prefix starts every tool name.
	Prefix string
}

// Skipped is a method not imported, and why.
type Skipped struct {
	Method string // "/package.Service/Method"
	Reason string
}

// namePattern is registry.NamePattern's, checked here so a refusal names
// the method it came from.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// Tools is one tool per unary method of src's services (chosen by o), in
// service then declaration order, and the methods skipped.
func Tools(src *Source, o Options) ([]*gatewayv1.Tool, []Skipped, error) {
	services, err := src.services(o.Service)
	if err != nil {
		return nil, nil, err
	}
	var (
		tools   []*gatewayv1.Tool
		skipped []Skipped
		byName  = map[string]string{}
		found   bool
	)
	for _, sd := range services {
		set, err := fileSet(sd.ParentFile())
		if err != nil {
			return nil, nil, err
		}
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			if o.Method != "" && string(md.Name()) != o.Method {
				continue
			}
			found = true
			full := fmt.Sprintf("/%s/%s", sd.FullName(), md.Name())
			if md.IsStreamingClient() || md.IsStreamingServer() {
				skipped = append(skipped, Skipped{Method: full, Reason: "a streaming method; only unary methods become tools"})
				continue
			}
			schema, err := protoschema.Schema(md.Input())
			var ue *protoschema.UnsupportedError
			if errors.As(err, &ue) {
				skipped = append(skipped, Skipped{Method: full, Reason: "its request " + err.Error()})
				continue
			} else if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", full, err)
			}
			name := o.Prefix + string(sd.Name()) + "." + string(md.Name())
			if !namePattern.MatchString(name) {
				return nil, nil, fmt.Errorf("%s: tool name %q does not fit ^[a-zA-Z0-9_.-]{1,64}$ (use a shorter --prefix, or import the method on its own)", full, name)
			}
			if other, dup := byName[name]; dup {
				return nil, nil, fmt.Errorf("%s and %s would both be tool %q: import one service at a time with --service, under different --prefix values", other, full, name)
			}
			byName[name] = full
			tools = append(tools, &gatewayv1.Tool{
				Name:        name,
				Description: description(md, full),
				InputSchema: schema,
				Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_GrpcMethod{GrpcMethod: &gatewayv1.GrpcMethod{
					Target: o.Target, Method: full, Descriptors: set}}},
			})
		}
	}
	if o.Method != "" && !found {
		return nil, nil, fmt.Errorf("no method %q in %s", o.Method, serviceList(services))
	}
	return tools, skipped, nil
}

func (src *Source) services(only string) ([]protoreflect.ServiceDescriptor, error) {
	var all []protoreflect.ServiceDescriptor
	if src.Services != nil {
		for _, n := range src.Services {
			d, err := src.Files.FindDescriptorByName(n)
			if err != nil {
				return nil, fmt.Errorf("service %s: not in its descriptors", n)
			}
			if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
				all = append(all, sd)
			}
		}
	} else {
		src.Files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
			for i := range f.Services().Len() {
				all = append(all, f.Services().Get(i))
			}
			return true
		})
		slices.SortFunc(all, func(a, b protoreflect.ServiceDescriptor) int {
			return strings.Compare(string(a.FullName()), string(b.FullName()))
		})
	}
	if only == "" {
		if len(all) == 0 {
			return nil, errors.New("the descriptors declare no service")
		}
		return all, nil
	}
	for _, sd := range all {
		if string(sd.FullName()) == only || string(sd.Name()) == only {
			return []protoreflect.ServiceDescriptor{sd}, nil
		}
	}
	return nil, fmt.Errorf("no service %q (there are: %s)", only, serviceList(all))
}

func serviceList(ss []protoreflect.ServiceDescriptor) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s.FullName())
	}
	return strings.Join(names, ", ")
}

// description is the method's leading comment (descriptors with source
// info), else what the tool calls.
func description(md protoreflect.MethodDescriptor, full string) string {
	c := strings.TrimSpace(md.ParentFile().SourceLocations().ByDescriptor(md).LeadingComments)
	if c == "" {
		return "Calls the gRPC method " + full + "."
	}
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// fileSet is f and every file it imports, dependencies first, serialized:
// what a gRPC-method tool stores to make its calls.
func fileSet(f protoreflect.FileDescriptor) ([]byte, error) {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		for i := range f.Imports().Len() {
			add(f.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(f)
	return proto.MarshalOptions{Deterministic: true}.Marshal(set)
}
