package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"
)

// fileTool is one entry of the declarative tools file:
//
//	tools:
//	  - name: create_board
//	    description: Create a board.
//	    backend: 127.0.0.1:7001
//	    timeout: 5s
//	    labels: {team: boards}
//	    annotations: {idempotent_hint: true}
//	    input_schema: {type: object, properties: {...}}
//
// A tool of another kind has spec (see fileSpec) instead of backend.
type fileTool struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	InputSchema json.RawMessage   `json:"input_schema"`
	Backend     string            `json:"backend"`
	Spec        *fileSpec         `json:"spec"`
	Timeout     string            `json:"timeout"`
	Labels      map[string]string `json:"labels"`
	Annotations *fileAnnotations  `json:"annotations"`
	// MaxResultBytes bounds the tool's result (0: the default).
	MaxResultBytes int64 `json:"max_result_bytes"`
	// OutputSchema and OnInvalidOutput: results checked against a schema.
	OutputSchema    json.RawMessage `json:"output_schema"`
	OnInvalidOutput string          `json:"on_invalid_output"`
}

// fileSpec is a tool's BackendSpec in the tools file, under the gRPC API's
// field names:
//
//	spec:
//	  mcp_tool: {url: https://weather.internal/mcp, tool: forecast, credential_file: /etc/flowdrop/weather.token}
//	  tls: {require: true}
//
//	spec:
//	  http_operation:
//	    base_url: https://pets.internal
//	    method: GET
//	    path: /pets/{petId}
//	    parameters: [{name: petId, in: path}, {name: verbose, in: query}]
//
// A gRPC method is not declared here: its descriptors are binary, so such
// tools are imported (flowdropctl tools import grpc).
type fileSpec struct {
	MCPTool       *fileMCPTool       `json:"mcp_tool"`
	HTTPOperation *fileHTTPOperation `json:"http_operation"`
	TLS           *fileTLS           `json:"tls"`
	GRPCMethod    json.RawMessage    `json:"grpc_method"`
}

type fileMCPTool struct {
	URL            string `json:"url"`
	Tool           string `json:"tool"`
	CredentialEnv  string `json:"credential_env"`
	CredentialFile string `json:"credential_file"`
}

type fileHTTPOperation struct {
	BaseURL        string              `json:"base_url"`
	Method         string              `json:"method"`
	Path           string              `json:"path"`
	Parameters     []fileHTTPParameter `json:"parameters"`
	BodyArgument   string              `json:"body_argument"`
	ResponseSchema json.RawMessage     `json:"response_schema"`
}

type fileHTTPParameter struct {
	Name string `json:"name"`
	In   string `json:"in"` // path, query, header or body
}

type fileTLS struct {
	CAFile     string `json:"ca_file"`
	CertFile   string `json:"cert_file"`
	KeyFile    string `json:"key_file"`
	ServerName string `json:"server_name"`
	Require    bool   `json:"require"`
}

// backendSpec is the registry's form of s; the reason names the field at
// fault when it has none. Everything else is Compile's to check.
func (s *fileSpec) backendSpec() (*BackendSpec, string) {
	if len(s.GRPCMethod) > 0 && string(s.GRPCMethod) != "null" {
		return nil, "spec.grpc_method: gRPC-method tools are imported, not declared (flowdropctl tools import grpc)"
	}
	out := &BackendSpec{}
	if m := s.MCPTool; m != nil {
		out.MCPTool = &MCPTool{URL: m.URL, Tool: m.Tool, CredentialEnv: m.CredentialEnv, CredentialFile: m.CredentialFile}
	}
	if h := s.HTTPOperation; h != nil {
		op := &HTTPOperation{BaseURL: h.BaseURL, Method: h.Method, Path: h.Path, BodyArgument: h.BodyArgument}
		for i, p := range h.Parameters {
			in, ok := ParseHTTPIn(p.In)
			if !ok {
				return nil, fmt.Sprintf("spec.http_operation.parameters[%d].in %q: must be path, query, header or body", i, p.In)
			}
			op.Parameters = append(op.Parameters, HTTPParameter{Name: p.Name, In: in})
		}
		if len(h.ResponseSchema) > 0 && string(h.ResponseSchema) != "null" {
			var rs structpb.Struct
			if err := protojson.Unmarshal(h.ResponseSchema, &rs); err != nil {
				return nil, fmt.Sprintf("spec.http_operation.response_schema must be an object: %v", err)
			}
			op.ResponseSchema = &rs
		}
		out.HTTPOperation = op
	}
	if t := s.TLS; t != nil {
		out.TLS = &TransportSecurity{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, Require: t.Require}
	}
	return out, ""
}

// fileAnnotations are ToolAnnotations in the tools file (MCP's names).
type fileAnnotations struct {
	ReadOnlyHint    *bool `json:"read_only_hint"`
	DestructiveHint *bool `json:"destructive_hint"`
	IdempotentHint  *bool `json:"idempotent_hint"`
	OpenWorldHint   *bool `json:"open_world_hint"`
}

// LoadFile reads a YAML or JSON tools file; see ParseTools.
func LoadFile(path string) ([]Tool, error) { return LoadFileWith(path, CompileOptions{}) }

// LoadFileWith is LoadFile compiling with o (the registry's options, so a
// file loads exactly when the registry can serve it).
func LoadFileWith(path string, o CompileOptions) ([]Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	return ParseToolsWith(data, path, o)
}

// ParseTools decodes a tools file (YAML or JSON; unknown fields and
// duplicate keys are errors) and compiles every tool, so a file that loads
// is a file every tool of which can be served. Errors name source, the tool
// and the problem.
func ParseTools(data []byte, source string) ([]Tool, error) {
	return ParseToolsWith(data, source, CompileOptions{})
}

// ParseToolsWith is ParseTools compiling with o.
func ParseToolsWith(data []byte, source string, o CompileOptions) ([]Tool, error) {
	// YAML (a superset of JSON) to JSON, refusing duplicate keys; then
	// decode strictly one tool at a time so an unknown field is reported
	// with the tool it belongs to.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("tools file %s: %w", source, err)
	}
	var f struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := decodeStrict(js, &f); err != nil {
		return nil, fmt.Errorf("tools file %s: %w", source, err)
	}
	tools := make([]Tool, 0, len(f.Tools))
	seen := make(map[string]int, len(f.Tools))
	for i, raw := range f.Tools {
		at := fmt.Sprintf("tools file %s: tools[%d]", source, i)
		var ft fileTool
		if err := decodeStrict(raw, &ft); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		named := at
		if ft.Name != "" {
			named += fmt.Sprintf(" (%q)", ft.Name)
		}
		if j, dup := seen[ft.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate tool name %q (first at tools[%d])", named, ft.Name, j)
		}
		seen[ft.Name] = i
		t := Tool{Name: ft.Name, Description: ft.Description, Backend: ft.Backend, Labels: ft.Labels, MaxResultBytes: ft.MaxResultBytes,
			OnInvalidOutput: ft.OnInvalidOutput}
		if len(ft.OutputSchema) > 0 && string(ft.OutputSchema) != "null" {
			var os structpb.Struct
			if err := protojson.Unmarshal(ft.OutputSchema, &os); err != nil {
				return nil, fmt.Errorf("%s: tools[%d] (%s): output_schema: %v", named, i, ft.Name, err)
			}
			t.OutputSchema = &os
		}
		if a := ft.Annotations; a != nil {
			t.Annotations = &ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
				IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
		}
		if ft.Spec != nil {
			spec, reason := ft.Spec.backendSpec()
			if reason != "" {
				return nil, fmt.Errorf("%s: %s", named, reason)
			}
			t.Spec = spec
		}
		if ft.Timeout != "" {
			d, err := time.ParseDuration(ft.Timeout)
			if err != nil {
				return nil, fmt.Errorf("%s: timeout %q is not a duration such as \"5s\"", named, ft.Timeout)
			}
			t.Timeout = d
		}
		if len(ft.InputSchema) > 0 && string(ft.InputSchema) != "null" {
			var s structpb.Struct
			if err := s.UnmarshalJSON(ft.InputSchema); err != nil {
				return nil, fmt.Errorf("%s: input_schema must be an object: %v", named, err)
			}
			t.InputSchema = &s
		}
		if _, err := o.Compile(t); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err) // the *ToolError names the tool
		}
		tools = append(tools, t)
	}
	return tools, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Seed writes tools into a store at start-up; it is SeedWith with an
// Admission that only compiles (no lint, no compatibility requirement).
func Seed(ctx context.Context, store Store, tools []Tool) error {
	return SeedWith(ctx, store, tools, Admission{})
}

// SeedWith writes tools into a store at start-up, each admitted first as a
// registration is (see Admission; so strict lint refuses a seeded tool as
// it refuses a registered one), stopping at the first refusal. A tool whose
// stored definition is the same (description, schema, backend, timeout,
// labels) is left alone, so restarting with the same file does not bump
// revisions or wake watchers; a changed definition overwrites the stored
// one. Writes are conditional on the revision just read, so replicas
// seeding at once do not overwrite each other blindly; a lost race is
// re-checked once.
func SeedWith(ctx context.Context, store Store, tools []Tool, a Admission) error {
	for _, t := range tools {
		t.Revision = 0
		adm, err := a.Admit(ctx, t, store.Get)
		if err != nil {
			var te *ToolError
			var le *LintRefusedError
			var ie *IncompatibleError
			if errors.As(err, &te) || errors.As(err, &le) || errors.As(err, &ie) {
				return err // they name the tool
			}
			return fmt.Errorf("seed tool %q: %w", t.Name, err)
		}
		cur := adm.Current
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				switch c, err := store.Get(ctx, t.Name); {
				case err == nil:
					cur = &c
				case errors.Is(err, ErrNotFound):
					cur = nil
				default:
					return fmt.Errorf("seed tool %q: %w", t.Name, err)
				}
			}
			var expected int64
			if cur != nil {
				if SameDefinition(*cur, t) {
					break // unchanged: leave the stored revision alone
				}
				expected = cur.Revision
			}
			_, err = store.Put(ctx, t, &expected)
			var mm *RevisionMismatchError
			if errors.As(err, &mm) && attempt == 0 {
				continue
			}
			if err != nil {
				return fmt.Errorf("seed tool %q: %w", t.Name, err)
			}
			break
		}
	}
	return nil
}

// SameDefinition reports whether two tools define the same thing, ignoring
// Revision.
func SameDefinition(a, b Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Backend == b.Backend && sameSpec(a.Spec, b.Spec) && sameAnnotations(a.Annotations, b.Annotations) &&
		a.MaxResultBytes == b.MaxResultBytes && a.OnInvalidOutput == b.OnInvalidOutput && proto.Equal(a.OutputSchema, b.OutputSchema) &&
		a.Timeout == b.Timeout && maps.Equal(a.Labels, b.Labels) && proto.Equal(a.InputSchema, b.InputSchema)
}
