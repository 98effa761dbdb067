package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry/schema"
)

// Entry is a tool with its schema compiled for the hot path: the RT-TOOL-8
// plan and the JSON Schema validator, built once per revision. Entries are
// immutable and shared by every snapshot that holds the same tool revision.
type Entry struct {
	Tool Tool
	Plan *normalize.Plan
	// Schema is the compiled input schema: validation, its messages and the
	// fast paths.
	Schema *schema.Schema
	// Method is a gRPC-method tool's method, resolved from the descriptors
	// stored with the revision; nil for other kinds.
	Method protoreflect.MethodDescriptor
	// Output is the compiled output schema (nil: results are not checked).
	Output *schema.Schema
	// lazy is set on a stub (lazy.go): Tool only, compiled on first use.
	lazy *lazyEntry
}

// Compile validates a tool definition and compiles its schema with the
// default normalization options.
func Compile(t Tool) (*Entry, error) { return CompileWith(t) }

// CompileWith is Compile with normalization options. Every refusal is a
// *ToolError naming the tool, the field and, for schemas, the JSON Pointer.
func CompileWith(t Tool, opts ...normalize.Option) (*Entry, error) {
	return CompileOptions{Normalize: opts}.Compile(t)
}

// CompileOptions are what a tool is compiled with: normalization options
// for its plan and schema options (schema.WithoutFastPaths) for its
// validator.
type CompileOptions struct {
	Normalize []normalize.Option
	Schema    []schema.Option
}

// Compile validates a tool definition and compiles its schema with o. Every
// refusal is a *ToolError naming the tool, the field and, for schemas, the
// JSON Pointer.
func (o CompileOptions) Compile(t Tool) (*Entry, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, err
	}
	if Reserved(t.Name) {
		return nil, &ToolError{Tool: t.Name, Field: "name", Reason: "is reserved for the gateway's discovery meta-tools (" + SearchToolsName + ", " + DescribeToolName + ")"}
	}
	if ReservedLabel(t.Name) {
		return nil, &ToolError{Tool: t.Name, Field: "name", Reason: "is reserved: the gateway's metrics count unregistered names (" + LabelUnregistered + ") and tools over a cap (" + LabelOther + ") under it"}
	}
	if te := checkBounds(t); te != nil {
		return nil, te
	}
	method, te := checkBackend(t)
	if te != nil {
		return nil, te
	}
	if t.MaxResultBytes < 0 {
		return nil, &ToolError{Tool: t.Name, Field: "max_result_bytes", Reason: fmt.Sprintf("must not be negative, got %d", t.MaxResultBytes)}
	}
	if t.Timeout < 0 {
		return nil, &ToolError{Tool: t.Name, Field: "timeout", Reason: fmt.Sprintf("must not be negative, got %s", t.Timeout)}
	}
	if t.InputSchema == nil {
		return nil, &ToolError{Tool: t.Name, Field: "input_schema", Reason: "is required"}
	}
	// An unsupported draft is the more basic problem: reported before the
	// root rule.
	if err := schema.CheckDraft(t.InputSchema); err != nil {
		return nil, schemaToolError(t.Name, err)
	}
	if err := checkRoot(t.Name, t.InputSchema); err != nil {
		return nil, err
	}
	s, err := schema.Compile(t.InputSchema, o.Schema...)
	if err != nil {
		return nil, schemaToolError(t.Name, err)
	}
	plan, err := normalize.Compile(t.InputSchema, o.Normalize...)
	if err != nil {
		te := &ToolError{Tool: t.Name, Field: "input_schema", Reason: err.Error()}
		if ce, ok := err.(*normalize.CompilationError); ok {
			te.Pointer, te.Reason = ce.Pointer, ce.Reason
		}
		return nil, te
	}
	out, terr := compileOutput(t, o)
	if terr != nil {
		return nil, terr
	}
	return &Entry{Tool: t, Plan: plan, Schema: s, Method: method, Output: out}, nil
}

// compileOutput compiles the tool's output schema (an object schema) and
// checks on_invalid_output.
func compileOutput(t Tool, o CompileOptions) (*schema.Schema, *ToolError) {
	switch t.OnInvalidOutput {
	case "", OnInvalidOutputError, OnInvalidOutputPass:
	default:
		return nil, &ToolError{Tool: t.Name, Field: "on_invalid_output", Reason: fmt.Sprintf("%q: must be %q or %q", t.OnInvalidOutput, OnInvalidOutputError, OnInvalidOutputPass)}
	}
	if t.OutputSchema == nil {
		return nil, nil
	}
	if ty := t.OutputSchema.GetFields()["type"].GetStringValue(); ty != "object" {
		return nil, &ToolError{Tool: t.Name, Field: "output_schema", Reason: `the root must be an object schema ("type": "object"), as MCP's outputSchema`}
	}
	s, err := schema.Compile(t.OutputSchema, o.Schema...)
	if err != nil {
		te := &ToolError{Tool: t.Name, Field: "output_schema", Reason: err.Error()}
		var ce *schema.CompileError
		if errors.As(err, &ce) {
			te.Pointer, te.Reason = ce.Pointer, ce.Reason
		}
		return nil, te
	}
	return s, nil
}

// schemaToolError is a *schema.CompileError as the *ToolError naming the
// tool's input_schema.
func schemaToolError(tool string, err error) *ToolError {
	te := &ToolError{Tool: tool, Field: "input_schema", Reason: err.Error()}
	var ce *schema.CompileError
	if errors.As(err, &ce) {
		te.Pointer, te.Reason = ce.Pointer, ce.Reason
	}
	return te
}

// checkRoot enforces an object root schema. Our reading: the root must say
// `"type": "object"` (or `["object"]`), or, without a type, declare
// `properties` — arguments always arrive as an object, and a root that
// allows other types (or only via $ref/anyOf) is a mistake model providers
// also reject.
func checkRoot(tool string, doc *structpb.Struct) *ToolError {
	bad := func(ptr, reason string) *ToolError {
		return &ToolError{Tool: tool, Field: "input_schema", Pointer: ptr, Reason: reason}
	}
	fields := doc.GetFields()
	typ, hasType := fields["type"]
	switch t := typ.AsInterface().(type) {
	case nil:
		if hasType {
			return bad("/type", `root type must be "object"; got null`)
		}
		if _, ok := fields["properties"].GetKind().(*structpb.Value_StructValue); !ok {
			return bad("", `root must be an object schema: set "type": "object"`)
		}
	case string:
		if t != "object" {
			return bad("/type", fmt.Sprintf("root type must be %q; got %q", "object", t))
		}
	case []any:
		if len(t) != 1 || t[0] != "object" {
			return bad("/type", fmt.Sprintf("root type must be %q; got %s", "object", describeTypes(t)))
		}
	default:
		return bad("/type", "root type must be \"object\"")
	}
	return nil
}

func describeTypes(a []any) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = fmt.Sprintf("%v", x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Validate checks normalized arguments against the tool's schema. rep is the
// normalization report for these arguments (may be nil); its skips explain
// type errors and its repairs travel with the error. It returns nil when the
// arguments are valid, a *ValidationError (naming the tool) when they are
// not, and a *schema.RuntimeError when the engine could not judge them (an
// internal error, not the caller's).
func (e *Entry) Validate(args *structpb.Struct, rep *normalize.Report) error {
	return e.ValidateWithin(context.Background(), args, rep, schema.DefaultMaxSteps)
}

// ValidateWithin is Validate within a step budget and ctx
// (schema.Schema.ValidateWithin): it also returns a *schema.BudgetError
// for arguments whose validation could take more than maxSteps, and ctx's
// error when ctx ends first.
func (e *Entry) ValidateWithin(ctx context.Context, args *structpb.Struct, rep *normalize.Report, maxSteps int) error {
	err := e.Schema.ValidateWithin(ctx, args, rep, maxSteps)
	if ve, ok := err.(*schema.ValidationError); ok {
		ve.Tool = e.Tool.Name
	}
	return err
}

// FastValidWire reports whether the wire bytes of a google.protobuf.Struct
// are proved valid without decoding them (schema.Schema.FastValidWire);
// false means "decode and call Validate". It does not allocate.
func (e *Entry) FastValidWire(args []byte) bool { return e.Schema.FastValidWire(args) }

// FastValidWireWithin is FastValidWire within a step budget and ctx
// (schema.Schema.FastValidWireWithin). It does not allocate.
func (e *Entry) FastValidWireWithin(ctx context.Context, args []byte, maxSteps int) bool {
	return e.Schema.FastValidWireWithin(ctx, args, maxSteps)
}

// FastPaths reports whether the entry was compiled with fast paths (off
// under WithoutFastPaths: Validate then always asks jsonschema and
// FastValidWire always returns false).
func (e *Entry) FastPaths() bool { return e.Schema.FastPaths() }
