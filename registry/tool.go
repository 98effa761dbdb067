package registry

import (
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Tool is one registered tool. Values are treated as immutable once stored.
type Tool struct {
	// Name matches NamePattern and is unique in a registry.
	Name        string
	Description string
	// InputSchema is the tool's JSON Schema for its arguments; the root must be an object schema.
	InputSchema *structpb.Struct
	// Backend is the gRPC dial target of the ToolBackendService that runs
	// the tool. Exactly one of Backend and Spec is set.
	Backend string
	// Timeout bounds every call of the tool (a caller's deadline may be
	// shorter, never longer); zero means the gateway default.
	Timeout time.Duration
	// Revision is assigned by the store on every write.
	Revision int64
	Labels   map[string]string
	// Spec is a typed backend (backend_spec.go); nil for a ToolBackendService.
	Spec *BackendSpec
	// Annotations are the tool's behaviour hints (annotations.go); nil: none.
	Annotations *ToolAnnotations
	// MaxResultBytes bounds the tool's result (0: DefaultMaxResultBytes); a
	// larger result is answered as a tool error naming the limit.
	MaxResultBytes int64
	// OutputSchema, when set, is the JSON Schema every result must satisfy
	// (an object schema); OnInvalidOutput is OnInvalidOutputError (also
	// "") or OnInvalidOutputPass.
	OutputSchema    *structpb.Struct
	OnInvalidOutput string
	// Origin is set on a tool imported from an upstream MCP server, whose
	// later changes to it are held in Pending (origin.go); nil: an admin
	// wrote the tool, and no upstream changes it.
	Origin *Origin
	// Pending is the upstream change awaiting approval; nil: none.
	Pending *PendingChange
}

// DefaultMaxResultBytes is a tool's result bound when it sets none: room
// for any answer a model can use, far below the 4 MiB messages carry.
const DefaultMaxResultBytes = 1 << 20

// ResultLimit is the tool's result bound in bytes.
func (t Tool) ResultLimit() int64 {
	if t.MaxResultBytes > 0 {
		return t.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

// What a result failing the tool's output schema becomes.
const (
	OnInvalidOutputError = "error" // a tool error naming the violations (the default)
	OnInvalidOutputPass  = "pass"  // forwarded as it is
)
