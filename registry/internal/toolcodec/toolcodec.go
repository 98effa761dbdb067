package toolcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Version is the format version written by Encode for a tool with a typed
// backend (Tool.Spec); other tools are written as VersionPlain, which every
// earlier build reads. Decode refuses any version it does not know, so an
// older binary never silently misreads a newer record.
const (
	Version      = 2
	VersionPlain = 1
)

// record is the JSON document. The schema is embedded as raw JSON produced by
// protojson so that structpb values (numbers, nulls, nesting) round-trip exactly.
type record struct {
	V           int               `json:"v"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	InputSchema json.RawMessage   `json:"input_schema,omitempty"`
	Backend     string            `json:"backend,omitempty"`
	Timeout     string            `json:"timeout,omitempty"` // time.Duration.String: exact to the nanosecond
	Revision    int64             `json:"revision,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Spec        *specRecord       `json:"spec,omitempty"` // version 2
}

// specRecord is registry.BackendSpec; descriptors are base64 (encoding/json's []byte).
type specRecord struct {
	GRPCMethod *grpcMethodRecord `json:"grpc_method,omitempty"`
	MCPTool    *mcpToolRecord    `json:"mcp_tool,omitempty"`
}

// mcpToolRecord is registry.MCPTool: references to a credential, never one.
type mcpToolRecord struct {
	URL            string `json:"url"`
	Tool           string `json:"tool"`
	CredentialEnv  string `json:"credential_env,omitempty"`
	CredentialFile string `json:"credential_file,omitempty"`
}

type grpcMethodRecord struct {
	Target      string `json:"target"`
	Method      string `json:"method"`
	Descriptors []byte `json:"descriptors"`
}

// Encode returns the stored form of t, including t.Revision when non-zero.
func Encode(t registry.Tool) ([]byte, error) {
	r := record{
		V:           VersionPlain,
		Name:        t.Name,
		Description: t.Description,
		Backend:     t.Backend,
		Revision:    t.Revision,
		Labels:      t.Labels,
	}
	if t.Timeout != 0 {
		r.Timeout = t.Timeout.String()
	}
	if t.Spec != nil {
		r.V, r.Spec = Version, &specRecord{}
		if m := t.Spec.GRPCMethod; m != nil {
			r.Spec.GRPCMethod = &grpcMethodRecord{Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}
		}
		if m := t.Spec.MCPTool; m != nil {
			r.Spec.MCPTool = (*mcpToolRecord)(m)
		}
	}
	if t.InputSchema != nil {
		raw, err := protojson.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: encode input_schema: %w", t.Name, err)
		}
		// protojson output has deliberately unstable whitespace; compact it so
		// equal tools encode to equal bytes.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: compact input_schema: %w", t.Name, err)
		}
		r.InputSchema = buf.Bytes()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("toolcodec: tool %q: %w", t.Name, err)
	}
	return b, nil
}

// Decode parses a stored tool. The error names the tool (when readable) and
// the field that is wrong.
func Decode(b []byte) (registry.Tool, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return registry.Tool{}, fmt.Errorf("toolcodec: decode: %w", err)
	}
	if r.V != Version && r.V != VersionPlain {
		return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: unsupported format version %d (this build reads version %d)", r.Name, r.V, Version)
	}
	t := registry.Tool{
		Name:        r.Name,
		Description: r.Description,
		Backend:     r.Backend,
		Revision:    r.Revision,
		Labels:      r.Labels,
	}
	if r.Spec != nil {
		t.Spec = &registry.BackendSpec{}
		if m := r.Spec.GRPCMethod; m != nil {
			t.Spec.GRPCMethod = &registry.GRPCMethod{Target: m.Target, Method: m.Method, Descriptors: m.Descriptors}
		}
		if m := r.Spec.MCPTool; m != nil {
			t.Spec.MCPTool = (*registry.MCPTool)(m)
		}
	}
	if r.Timeout != "" {
		d, err := time.ParseDuration(r.Timeout)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: timeout: %w", r.Name, err)
		}
		t.Timeout = d
	}
	if len(r.InputSchema) > 0 && !bytes.Equal(r.InputSchema, []byte("null")) {
		s := &structpb.Struct{}
		if err := protojson.Unmarshal(r.InputSchema, s); err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: input_schema: %w", r.Name, err)
		}
		t.InputSchema = s
	}
	return t, nil
}
