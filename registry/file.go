package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
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
// field names: one kind under its name (the kind's own file says its form:
// mcp_tool.go, http_operation.go; a gRPC method is not declared here, its
// descriptors are binary, so such tools are imported) and tls:
//
//	spec:
//	  mcp_tool: {url: https://weather.internal/mcp, tool: forecast, credential_file: /etc/flowdrop/weather.token}
//	  tls: {require: true}
//
// It is read strictly like the rest of the file: an unknown field, or a
// kind this build does not know, is an error.
type fileSpec struct {
	spec BackendSpec
	// reason is why the spec cannot be read (naming the field), "" when it can.
	reason string
}

// fileTLS is a TransportSecurity.
type fileTLS struct {
	CAFile     string `json:"ca_file"`
	CertFile   string `json:"cert_file"`
	KeyFile    string `json:"key_file"`
	ServerName string `json:"server_name"`
	Require    bool   `json:"require"`
}

func (s *fileSpec) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if _, ok := SpecKind(name); !ok && name != "tls" {
			return unknownKind(name) // or a misspelt tls: either way refused
		}
	}
	for _, k := range Kinds() {
		raw, ok := fields[k.String()]
		if !ok || string(raw) == "null" {
			continue
		}
		reason, err := backendKinds[k].fromFile(raw, &s.spec)
		if err != nil {
			return err
		}
		if s.reason == "" {
			s.reason = reason
		}
	}
	if raw, ok := fields["tls"]; ok && string(raw) != "null" {
		var t fileTLS
		if err := decodeStrict(raw, &t); err != nil {
			return err
		}
		s.spec.TLS = &TransportSecurity{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, Require: t.Require}
	}
	return nil
}

// backendSpec is the registry's form of s; the reason names the field at
// fault when it has none. Everything else is Compile's to check.
func (s *fileSpec) backendSpec() (*BackendSpec, string) {
	if s.reason != "" {
		return nil, s.reason
	}
	out := s.spec
	return &out, ""
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
