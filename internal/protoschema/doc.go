// Package protoschema derives a tool's input JSON Schema from a protobuf
// request message's descriptor, following the proto3 JSON mapping
// (protojson): the schema accepts exactly the JSON objects protojson reads
// into that message in strict mode, so a gRPC method can be offered as a
// tool, its arguments normalized (RT-TOOL-8) and validated against the
// schema, then read into the request with protojson.
//
//	md := (&notesv1.CreateNoteRequest{}).ProtoReflect().Descriptor()
//	schema, err := protoschema.Schema(md) // *structpb.Struct, draft 2020-12
//
// Descriptors come from server reflection or a descriptor set file; with
// source info (a descriptor set built with it, e.g. `buf build -o`), proto
// comments become descriptions.
//
// The package is a pure library: it imports protobuf's reflection and
// structpb only — no gRPC, and nothing else of the gateway.
package protoschema
