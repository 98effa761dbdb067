// Package export renders registered tools in the tool-definition shapes
// model APIs take (OpenAI chat tools, OpenAI strict, Anthropic, Gemini,
// MCP), so an agent can hand the gateway's tools to its model as they are.
//
// Where the provider lint (registry/lint) finds an error a rewrite can fix
// without changing which calls the tool accepts, the rewrite is applied
// (lint.Fit); the result is linted again with the provider's profile, and
// a tool that still has an error is left out with its findings: a provider
// that rejects one tool definition rejects the whole request.
package export

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
)

// Format is a model API's tool-definition shape.
type Format string

// The formats Export renders.
const (
	OpenAI       Format = "openai"        // chat tools: {"type":"function","function":{name,description,parameters}}
	OpenAIStrict Format = "openai-strict" // the same with "strict": true and the strict rewrite
	Anthropic    Format = "anthropic"     // {name, description, input_schema}
	Gemini       Format = "gemini"        // {"functionDeclarations":[{name, description, parameters}]}
	MCP          Format = "mcp"           // {name, description, inputSchema}
)

// Formats lists every format in a fixed order.
func Formats() []Format { return []Format{OpenAI, OpenAIStrict, Anthropic, Gemini, MCP} }

// ParseFormat returns the format called s, or false.
func ParseFormat(s string) (Format, bool) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, true
		}
	}
	return "", false
}

// FormatNames is the formats as "a, b or c", for messages.
func FormatNames() string {
	var names []string
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// LeftOut is a tool the format cannot carry, with the lint errors that
// no safe rewrite fixes.
type LeftOut struct {
	Name     string
	Findings []lint.Finding
}

// Result is an export: Document is one JSON document (an array of tool
// definitions; for Gemini, one tools object holding every declaration).
type Result struct {
	Document json.RawMessage
	LeftOut  []LeftOut
	// NullableOptional names the tools in Document (openai-strict) whose
	// optional properties the strict rewrite made nullable where the
	// registered schema does not accept null: a model sends null there
	// for "not given", which the gateway refuses unless its policy drops
	// optional nulls for the tool.
	NullableOptional []string
}

// profiles are the lint profiles behind the formats (MCP takes any JSON
// Schema object, so it has none).
var profiles = map[Format]lint.Profile{
	OpenAI: lint.OpenAI, OpenAIStrict: lint.OpenAIStrict, Anthropic: lint.Anthropic, Gemini: lint.Gemini,
}

// Namer says which provider-safe name a tool is exported under and
// whether that name is its alone (registry.Snapshot, registry.ExportNames).
type Namer interface {
	ExportName(name string) (string, bool)
}

// Export renders tools (in the order given) in format f. The provider
// formats name each tool by its export name (registry/exportname.go:
// itself when provider-safe, e.g. an alias; else a deterministic safe
// form, which the gateway maps back when called); names judges which
// names are the tool's alone (nil: among tools). MCP takes the registered
// names as they are.
func Export(f Format, tools []registry.Tool, names Namer) (Result, error) {
	if _, ok := ParseFormat(string(f)); !ok {
		return Result{}, fmt.Errorf("unknown export format %q (want %s)", f, FormatNames())
	}
	var (
		res  Result
		defs = []any{}
	)
	if names == nil {
		all := make([]string, len(tools))
		for i, t := range tools {
			all[i] = t.Name
		}
		names = registry.NewExportNames(all)
	}
	for _, t := range tools {
		schema := map[string]any{}
		if t.InputSchema != nil {
			schema = t.InputSchema.AsMap()
		}
		nulled := false
		if p, ok := profiles[f]; ok {
			name, ok := names.ExportName(t.Name)
			if !ok {
				res.LeftOut = append(res.LeftOut, LeftOut{Name: t.Name, Findings: []lint.Finding{nameConflict(p, t.Name, name)}})
				continue
			}
			nulled = lint.Fit(p, schema)
			if errs := lintErrors(name, schema, p); len(errs) > 0 {
				res.LeftOut = append(res.LeftOut, LeftOut{Name: t.Name, Findings: errs})
				continue
			}
			t.Name = name
		}
		defs = append(defs, definition(f, t, schema))
		if nulled {
			res.NullableOptional = append(res.NullableOptional, t.Name)
		}
	}
	var doc any = defs
	if f == Gemini {
		doc = geminiTools{FunctionDeclarations: defs}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return Result{}, fmt.Errorf("encoding the %s tools: %w", f, err)
	}
	res.Document = b
	return res, nil
}

// nameConflict is the finding of a tool whose export name another tool
// has (or shares): exported, calls by it could reach either.
func nameConflict(p lint.Profile, name, exported string) lint.Finding {
	msg := "the tool name has no provider-safe form within 64 characters; register an alias"
	if exported != "" {
		msg = fmt.Sprintf("the tool's provider-safe name %q is another tool's name or shared with one; register an alias", exported)
	}
	return lint.Finding{Profile: p, Path: lint.NamePath, Rule: "name-conflict", Severity: lint.SeverityError, Message: msg}
}

// lintErrors are the error findings of the schema as it will be sent.
func lintErrors(name string, schema map[string]any, p lint.Profile) []lint.Finding {
	s, err := structpb.NewStruct(schema)
	if err != nil {
		// AsMap's output always converts back; keep the tool out if not.
		return []lint.Finding{{Profile: p, Rule: "schema-not-json", Severity: lint.SeverityError, Message: err.Error()}}
	}
	var errs []lint.Finding
	for _, f := range lint.Lint(name, s, p) {
		if f.Severity == lint.SeverityError {
			errs = append(errs, f)
		}
	}
	return errs
}

// The documents' shapes, with their keys in the providers' documented order.
type (
	openAITool struct {
		Type     string         `json:"type"`
		Function openAIFunction `json:"function"`
	}
	openAIFunction struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
		Strict      bool           `json:"strict,omitempty"`
	}
	anthropicTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
	geminiTools struct {
		FunctionDeclarations []any `json:"functionDeclarations"`
	}
	geminiFunction struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	mcpTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"inputSchema"`
	}
)

func definition(f Format, t registry.Tool, schema map[string]any) any {
	switch f {
	case OpenAI, OpenAIStrict:
		return openAITool{Type: "function", Function: openAIFunction{Name: t.Name, Description: t.Description,
			Parameters: schema, Strict: f == OpenAIStrict}}
	case Anthropic:
		return anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema}
	case Gemini:
		return geminiFunction{Name: t.Name, Description: t.Description, Parameters: schema}
	}
	return mcpTool{Name: t.Name, Description: t.Description, InputSchema: schema}
}
