package schema

import (
	"fmt"
	"strings"

	"github.com/flowdrop/gateway/normalize"
)

// CompileError reports a schema that cannot be compiled.
type CompileError struct {
	// Pointer is the JSON Pointer of the offending location in the schema
	// ("" when the problem is not tied to one).
	Pointer string
	Reason  string
}

func (e *CompileError) Error() string {
	if e.Pointer == "" {
		return "input schema: " + e.Reason
	}
	return "input schema at " + e.Pointer + ": " + e.Reason
}

// Violation is one reason arguments failed validation.
type Violation struct {
	// Pointer is the RFC 6901 JSON Pointer of the offending argument ("" for
	// the arguments object itself; for a missing required argument, the
	// pointer it would have).
	Pointer string
	// Message says what is wrong in words a model can act on.
	Message string
	// Keyword is the JSON Schema keyword that failed ("type", "required",
	// "additionalProperties", …; "finite" for a number JSON cannot
	// express, "json" for arguments text that is not JSON), "" when no
	// keyword applies: what repair analytics count failures by.
	Keyword string
}

// ValidationError reports arguments that do not satisfy the tool's schema
// after normalization. It is the caller's (the model's) to fix.
type ValidationError struct {
	// Tool names the tool; Schema.Validate leaves it empty for the caller,
	// which knows the name, to set.
	Tool       string
	Violations []Violation
	// Repairs are the normalization repairs made before validation.
	Repairs []normalize.Repair
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %s", e.Tool, e.Problems())
}

// Problems is the violations' messages alone, for a value that is not a
// tool's arguments (a result held to its output schema).
func (e *ValidationError) Problems() string {
	var b strings.Builder
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.Message)
	}
	return b.String()
}

// RuntimeError is the validation engine failing to judge arguments: an
// error from jsonschema other than a validation result, or a schema fault
// that shows only at validation time (a $ref cycle that never descends).
// It is never the caller's fault: map it to an internal error, never to a
// model-facing violation.
type RuntimeError struct {
	Err error
}

func (e *RuntimeError) Error() string { return "schema validation failed: " + e.Err.Error() }

func (e *RuntimeError) Unwrap() error { return e.Err }
