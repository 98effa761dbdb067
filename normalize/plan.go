package normalize

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"
)

// CompilationError reports a schema that cannot be compiled into a Plan.
type CompilationError struct {
	// Pointer is the JSON Pointer into the schema where the problem is.
	Pointer string
	Reason  string
}

func (e *CompilationError) Error() string {
	return fmt.Sprintf("normalize: schema %s: %s", e.Pointer, e.Reason)
}

// Plan is a tool schema compiled into per-parameter decisions. It is
// immutable and safe for concurrent use.
type Plan struct {
	opts options
	// TODO(normalize): per-parameter decisions.
}

// Compile walks a tool's input schema once. STUB: to be replaced.
func Compile(schema *structpb.Struct, opts ...Option) (*Plan, error) {
	p := &Plan{opts: defaultOptions()}
	for _, o := range opts {
		o(&p.opts)
	}
	return p, nil
}

// CompileJSON is Compile for a schema given as JSON text.
func CompileJSON(schema []byte, opts ...Option) (*Plan, error) {
	var s structpb.Struct
	if err := s.UnmarshalJSON(schema); err != nil {
		return nil, &CompilationError{Pointer: "", Reason: "not a JSON object: " + err.Error()}
	}
	_ = json.Valid
	return Compile(&s, opts...)
}

// Apply normalizes args per RT-TOOL-8 without mutating them. When nothing
// needs repair it returns args itself and allocates nothing. STUB.
func (p *Plan) Apply(args *structpb.Struct) (*structpb.Struct, Report) {
	return args, Report{}
}
