package registry

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The registry's bounds on what one tool carries into every agent's
// context and every listing, whatever registers it (RegisterTool, a tools
// file, an import, the upstream follower): a description of at most
// MaxDescriptionBytes bytes, and each schema (input, output, an HTTP
// operation's response schema) at most MaxSchemaBytes in its protobuf
// encoding (about its JSON size). A registry listing pages by count, so
// these keep a page within a message's 4 MiB.
const (
	MaxDescriptionBytes = 64 << 10
	MaxSchemaBytes      = 1 << 20
)

// checkBounds refuses a tool over the registry's bounds, before anything
// compiles it.
func checkBounds(t Tool) *ToolError {
	if n := len(t.Description); n > MaxDescriptionBytes {
		return &ToolError{Tool: t.Name, Field: "description", Reason: fmt.Sprintf("is %d bytes; at most %d", n, MaxDescriptionBytes)}
	}
	schemas := []struct {
		field string
		s     *structpb.Struct
	}{{"input_schema", t.InputSchema}, {"output_schema", t.OutputSchema}}
	if t.Spec != nil && t.Spec.HTTPOperation != nil {
		schemas = append(schemas, struct {
			field string
			s     *structpb.Struct
		}{"spec.http_operation.response_schema", t.Spec.HTTPOperation.ResponseSchema})
	}
	for _, s := range schemas {
		if s.s == nil {
			continue
		}
		if n := proto.Size(s.s); n > MaxSchemaBytes {
			return &ToolError{Tool: t.Name, Field: s.field, Reason: fmt.Sprintf("is %d bytes encoded; at most %d", n, MaxSchemaBytes)}
		}
	}
	return nil
}
