package grpcimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The reflection methods. v1alpha's messages are v1's on the wire (same
// fields, same numbers), so one client speaks both.
const (
	reflectionV1      = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
	reflectionV1Alpha = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
)

// FromReflection reads the services cc serves (other than reflection
// itself) and their files through server reflection: v1, or v1alpha when
// the server does not serve v1.
func FromReflection(ctx context.Context, cc grpc.ClientConnInterface) (*Source, error) {
	src, err := reflect(ctx, cc, reflectionV1)
	if status.Code(err) == codes.Unimplemented {
		src, err = reflect(ctx, cc, reflectionV1Alpha)
		if status.Code(err) == codes.Unimplemented {
			return nil, errors.New("the server does not serve reflection (v1 or v1alpha): give its descriptors with --protoset FILE")
		}
	}
	return src, err
}

func reflect(ctx context.Context, cc grpc.ClientConnInterface, method string) (*Source, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return nil, err
	}
	ask := func(req *reflectionv1.ServerReflectionRequest) (*reflectionv1.ServerReflectionResponse, error) {
		if err := stream.SendMsg(req); err != nil {
			if errors.Is(err, io.EOF) {
				_, err = ask0(stream)
			}
			return nil, err
		}
		resp, err := ask0(stream)
		if err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, status.Error(codes.Code(e.GetErrorCode()), e.GetErrorMessage())
		}
		return resp, nil
	}
	resp, err := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var services []protoreflect.FullName
	for _, s := range resp.GetListServicesResponse().GetService() {
		if !strings.HasPrefix(s.GetName(), "grpc.reflection.") {
			services = append(services, protoreflect.FullName(s.GetName()))
		}
	}
	slices.Sort(services)
	files := map[string]*descriptorpb.FileDescriptorProto{}
	var want []string // file names still to fetch
	take := func(resp *reflectionv1.ServerReflectionResponse) error {
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("reflection sent a file descriptor that does not decode: %w", err)
			}
			if files[fd.GetName()] == nil {
				files[fd.GetName()] = fd
				want = append(want, fd.GetDependency()...)
			}
		}
		return nil
	}
	for _, s := range services {
		resp, err := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: string(s)}})
		if err != nil {
			return nil, fmt.Errorf("reflection: the file of %s: %w", s, err)
		}
		if err := take(resp); err != nil {
			return nil, err
		}
	}
	// Servers may send a file without its imports: ask for each one missing.
	for len(want) > 0 {
		name := want[0]
		want = want[1:]
		if files[name] != nil {
			continue
		}
		resp, err := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
		if err != nil {
			return nil, fmt.Errorf("reflection: file %s: %w", name, err)
		}
		if err := take(resp); err != nil {
			return nil, err
		}
	}
	stream.CloseSend()
	set := &descriptorpb.FileDescriptorSet{}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		set.File = append(set.File, files[n])
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("reflection: the descriptors do not resolve: %w", err)
	}
	return &Source{Files: reg, Services: services}, nil
}

func ask0(stream grpc.ClientStream) (*reflectionv1.ServerReflectionResponse, error) {
	resp := new(reflectionv1.ServerReflectionResponse)
	if err := stream.RecvMsg(resp); err != nil {
		return nil, err
	}
	return resp, nil
}
