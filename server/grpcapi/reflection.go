package grpcapi

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/flowdrop/gateway/gen/sourceinfo"
)

// registerReflection serves gRPC reflection (v1 and v1alpha) from the
// contract's descriptors with their comments, so `grpcurl describe` shows
// the documentation: the generated Go code carries descriptors without
// source info. Files outside the contract (well-known types, health) come
// from the global registry as before. The files are built and checked here,
// so a stale embedded set fails the start, and then dropped: built, they
// hold ~0.85 MB of live heap, which the collector's target multiplies by
// 1 + --gc-percent/100 (~4 MB of resident heap at the default 400) for a
// service most gateways never see called; the first reflection request
// builds them again (BENCHMARKS.md, "Where the gateway's peak RSS goes").
func registerReflection(gs *grpc.Server) error {
	if _, err := sourceFiles(sourceinfo.FileDescriptorSet); err != nil {
		return err
	}
	files := &lazyFiles{build: sync.OnceValues(func() (*layeredFiles, error) {
		return sourceFiles(sourceinfo.FileDescriptorSet)
	})}
	srv := reflection.NewServerV1(reflection.ServerOptions{Services: gs, DescriptorResolver: files})
	grpc_reflection_v1.RegisterServerReflectionServer(gs, srv)
	grpc_reflection_v1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(reflection.ServerOptions{Services: gs, DescriptorResolver: files}))
	return nil
}

// lazyFiles is the reflection services' resolver: the contract's files with
// source info, built on the first lookup (registerReflection checked they
// build).
type lazyFiles struct {
	build func() (*layeredFiles, error)
}

func (l *lazyFiles) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	files, err := l.build()
	if err != nil {
		return nil, err
	}
	return files.FindFileByPath(path)
}

func (l *lazyFiles) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	files, err := l.build()
	if err != nil {
		return nil, err
	}
	return files.FindDescriptorByName(name)
}

// sourceFiles builds the contract's files from set, resolving their imports
// among themselves and then in the global registry; every file must be the
// one compiled in (same path, same messages), or the build fails: a stale
// embedded set would describe another contract than the one served.
func sourceFiles(set []byte) (*layeredFiles, error) {
	var fds descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(set, &fds); err != nil {
		return nil, fmt.Errorf("reflection source info: %w", err)
	}
	local := new(protoregistry.Files)
	l := &layeredFiles{local: local}
	for _, fdp := range fds.GetFile() {
		fdp.ProtoReflect().SetUnknown(nil) // buf's image fields
		fd, err := protodesc.NewFile(fdp, l)
		if err != nil {
			return nil, fmt.Errorf("reflection source info: %s: %w", fdp.GetName(), err)
		}
		compiled, err := protoregistry.GlobalFiles.FindFileByPath(fd.Path())
		if err != nil || !proto.Equal(withoutSourceInfo(fd), withoutSourceInfo(compiled)) {
			return nil, fmt.Errorf("reflection source info: %s differs from the compiled contract (run ./generate)", fd.Path())
		}
		if err := local.RegisterFile(fd); err != nil {
			return nil, fmt.Errorf("reflection source info: %w", err)
		}
	}
	return l, nil
}

func withoutSourceInfo(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	p := protodesc.ToFileDescriptorProto(fd)
	p.SourceCodeInfo = nil
	return p
}

// layeredFiles finds a file or descriptor among the contract's files with
// source info first, then in the global registry.
type layeredFiles struct{ local *protoregistry.Files }

func (l *layeredFiles) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := l.local.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (l *layeredFiles) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := l.local.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
