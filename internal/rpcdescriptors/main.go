// Command rpcdescriptors writes, as a FileDescriptorSet on stdout, the
// google.rpc protos a gRPC client needs to read the gateway's error details
// (google/rpc/status.proto, google/rpc/error_details.proto) with the files
// they import. tools/python/generate gives it to protoc
// (--descriptor_set_in) to generate their Python modules into gen/python:
// Debian has no python googleapis-common-protos, and the .proto sources are
// not vendored here, but Go's generated packages carry the descriptors.
package main

import (
	"fmt"
	"os"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func main() {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	// Dependencies first: protoc wants a file's imports before it.
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(statuspb.File_google_rpc_status_proto)
	add(errdetails.File_google_rpc_error_details_proto)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rpcdescriptors:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(b); err != nil {
		fmt.Fprintln(os.Stderr, "rpcdescriptors:", err)
		os.Exit(1)
	}
}
