package registry

import (
	"fmt"
	"strings"
)

// ToolError reports a tool definition that cannot be registered.
type ToolError struct {
	Tool  string
	Field string // "name", "input_schema", "backend", ...
	// Pointer is a JSON Pointer into the input schema, when Field is "input_schema".
	Pointer string
	Reason  string
}

func (e *ToolError) Error() string {
	where := e.Field
	if e.Pointer != "" {
		where += " at " + e.Pointer
	}
	return fmt.Sprintf("tool %q: %s: %s", e.Tool, where, e.Reason)
}

// RevisionMismatchError is an optimistic-concurrency failure: a tool's, or
// when Bundle is set a bundle's (Tool is then empty).
type RevisionMismatchError struct {
	Tool     string
	Bundle   string
	Expected int64
	Actual   int64 // 0: the tool does not exist
}

func (e *RevisionMismatchError) Error() string {
	if e.Bundle != "" {
		return fmt.Sprintf("bundle %q: expected revision %d, current revision is %d", e.Bundle, e.Expected, e.Actual)
	}
	return fmt.Sprintf("tool %q: expected revision %d, current revision is %d", e.Tool, e.Expected, e.Actual)
}

// IncompatibleError refuses a re-registration that would break existing
// callers (RegisterOptions.RequireCompatible).
type IncompatibleError struct {
	Tool  string
	Notes []CompatNote
}

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %q: update would break existing callers:", e.Tool)
	for i, n := range e.Notes {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteByte(' ')
		b.WriteString(n.Message)
	}
	return b.String()
}
