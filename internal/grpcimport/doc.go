// Package grpcimport turns the unary methods of a gRPC service into tool
// definitions of the gRPC-method kind: descriptors from server reflection
// (v1, falling back to v1alpha) or from a descriptor set file, one tool
// per unary method, its input schema derived from the request message
// (internal/protoschema), its description from the method's comments, and
// the descriptors the calls need stored with the tool.
//
// Tool names are <prefix><Service>.<Method>, the service's unqualified
// name: protobuf identifiers are letters, digits and underscores, so the
// name fits ^[a-zA-Z0-9_.-]{1,64}$ unless it is longer than 64 bytes, or
// the prefix does not fit; such a name is refused naming it, as are two
// methods that would share a name.
//
// It imports gRPC (the reflection client), protobuf, the contract and
// internal/protoschema; flowdropctl's `tools import grpc` is its user.
package grpcimport
