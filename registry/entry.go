package registry

import (
	"github.com/flowdrop/gateway/normalize"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Entry is a tool with its schema compiled for the hot path: the RT-TOOL-8
// plan and the validator, built once per revision.
type Entry struct {
	Tool      Tool
	Plan      *normalize.Plan
	Validator *jsonschema.Schema
}

// Compile validates a tool definition and compiles its schema. SKELETON: to be completed.
func Compile(t Tool) (*Entry, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, err
	}
	plan, err := normalize.Compile(t.InputSchema)
	if err != nil {
		return nil, &ToolError{Tool: t.Name, Field: "input_schema", Reason: err.Error()}
	}
	return &Entry{Tool: t, Plan: plan}, nil
}
