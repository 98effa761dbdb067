package toolcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Version is the format version written by Encode for an imported tool
// (an origin, a pending change); a tool with annotations or transport
// security is written as VersionAnnotations, one with a typed backend
// (Tool.Spec) without either as VersionSpec, other tools as VersionPlain,
// which every earlier build reads. Decode refuses any version it does not
// know, so an older binary never silently misreads a newer record (one
// that dropped a tool's TLS would call it in plaintext; one that dropped
// its origin would let the upstream change it unapproved).
const (
	Version            = 4
	VersionAnnotations = 3
	VersionSpec        = 2
	VersionPlain       = 1
)

// record is the JSON document. The schema is embedded as raw JSON produced by
// protojson so that structpb values (numbers, nulls, nesting) round-trip exactly.
type record struct {
	V           int                `json:"v"`
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	InputSchema json.RawMessage    `json:"input_schema,omitempty"`
	Backend     string             `json:"backend,omitempty"`
	Timeout     string             `json:"timeout,omitempty"` // time.Duration.String: exact to the nanosecond
	Revision    int64              `json:"revision,omitempty"`
	Labels      map[string]string  `json:"labels,omitempty"`
	Spec        *specRecord        `json:"spec,omitempty"`        // version 2
	Annotations *annotationsRecord `json:"annotations,omitempty"` // version 3
	// MaxResultBytes is Tool.MaxResultBytes (version 3: an older build
	// must refuse the record rather than drop the bound).
	MaxResultBytes int64 `json:"max_result_bytes,omitempty"`
	// OutputSchema and OnInvalidOutput (version 3, like MaxResultBytes).
	OutputSchema    json.RawMessage `json:"output_schema,omitempty"`
	OnInvalidOutput string          `json:"on_invalid_output,omitempty"`
	// Origin and Pending (version 4).
	Origin  *originRecord  `json:"origin,omitempty"`
	Pending *pendingRecord `json:"pending,omitempty"`
}

// originRecord is registry.Origin.
type originRecord struct {
	MCPUpstream    string `json:"mcp_upstream"`
	UpstreamDigest string `json:"upstream_digest,omitempty"`
}

// pendingRecord is registry.PendingChange; the definition's schemas are
// raw protojson like the tool's own.
type pendingRecord struct {
	Removed      bool               `json:"removed,omitempty"`
	Description  string             `json:"description,omitempty"`
	InputSchema  json.RawMessage    `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage    `json:"output_schema,omitempty"`
	Annotations  *annotationsRecord `json:"annotations,omitempty"`
	Digest       string             `json:"digest"`
	DetectedAt   time.Time          `json:"detected_at"`
}

// annotationsRecord is registry.ToolAnnotations; a nil hint is unset.
type annotationsRecord struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// tlsRecord is registry.TransportSecurity (version 3).
type tlsRecord struct {
	CAFile     string `json:"ca_file,omitempty"`
	CertFile   string `json:"cert_file,omitempty"`
	KeyFile    string `json:"key_file,omitempty"`
	ServerName string `json:"server_name,omitempty"`
	Require    bool   `json:"require,omitempty"`
}

// specRecord is registry.BackendSpec: {"<kind>": <the kind's own stored
// form>, "tls": …}. The registry's kinds own their forms
// (registry.EncodeSpecKind, DecodeSpecKind); a kind this build does not
// know is refused on reading, never dropped.
type specRecord struct {
	Kind      string          // "" when the spec names none
	KindValue any             // the kind's stored form
	TLS       *tlsRecord      // version 3
	raw       json.RawMessage // as read, for decodeSpec
}

func (s *specRecord) UnmarshalJSON(b []byte) error {
	s.raw = bytes.Clone(b)
	return nil
}

// MarshalJSON writes the kind, then tls: the bytes the per-kind fields
// wrote before the kinds owned their forms.
func (s *specRecord) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if s.Kind != "" {
		v, err := json.Marshal(s.KindValue)
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(s.Kind)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	if s.TLS != nil {
		v, err := json.Marshal(s.TLS)
		if err != nil {
			return nil, err
		}
		if s.Kind != "" {
			b.WriteByte(',')
		}
		b.WriteString(`"tls":`)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeSpec reads a stored spec.
func decodeSpec(raw json.RawMessage) (*registry.BackendSpec, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	out := &registry.BackendSpec{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		v := fields[name]
		if bytes.Equal(v, []byte("null")) {
			continue
		}
		if name == "tls" {
			var s tlsRecord
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("spec.tls: %w", err)
			}
			out.TLS = &registry.TransportSecurity{CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile, ServerName: s.ServerName, Require: s.Require}
			continue
		}
		if err := registry.DecodeSpecKind(name, v, out); err != nil {
			return nil, err
		}
	}
	return out, nil
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
		name, v, err := registry.EncodeSpecKind(t.Spec)
		if err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: %w", t.Name, err)
		}
		r.V, r.Spec = VersionSpec, &specRecord{Kind: name, KindValue: v}
		if s := t.Spec.TLS; s != nil {
			r.V = max(r.V, VersionAnnotations)
			r.Spec.TLS = &tlsRecord{CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile, ServerName: s.ServerName, Require: s.Require}
		}
	}
	if t.MaxResultBytes != 0 {
		r.V, r.MaxResultBytes = VersionAnnotations, t.MaxResultBytes
	}
	if t.OnInvalidOutput != "" {
		r.V, r.OnInvalidOutput = VersionAnnotations, t.OnInvalidOutput
	}
	if t.OutputSchema != nil {
		raw, err := compactStruct(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: encode output_schema: %w", t.Name, err)
		}
		r.V, r.OutputSchema = VersionAnnotations, raw
	}
	if a := t.Annotations; a != nil {
		r.V = VersionAnnotations
		r.Annotations = encodeAnnotations(a)
	}
	if o := t.Origin; o != nil {
		r.V, r.Origin = Version, &originRecord{MCPUpstream: o.MCPUpstream, UpstreamDigest: o.UpstreamDigest}
	}
	if p := t.Pending; p != nil {
		pr, err := encodePending(p)
		if err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: %w", t.Name, err)
		}
		r.V, r.Pending = Version, pr
	}
	if t.InputSchema != nil {
		raw, err := compactStruct(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("toolcodec: tool %q: encode input_schema: %w", t.Name, err)
		}
		r.InputSchema = raw
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("toolcodec: tool %q: %w", t.Name, err)
	}
	return b, nil
}

// Decode parses a stored tool. The error names the tool (when readable) and
// the field that is wrong.
func Decode(b []byte) (registry.Tool, error) { return decode(b, nil) }

// decode is Decode reading the tool's schemas through sh (nil: each its own).
func decode(b []byte, sh *schemas) (registry.Tool, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return registry.Tool{}, fmt.Errorf("toolcodec: decode: %w", err)
	}
	if r.V != Version && r.V != VersionAnnotations && r.V != VersionSpec && r.V != VersionPlain {
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
		spec, err := decodeSpec(r.Spec.raw)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: %w", r.Name, err)
		}
		t.Spec = spec
	}
	t.MaxResultBytes, t.OnInvalidOutput = r.MaxResultBytes, r.OnInvalidOutput
	if len(r.OutputSchema) > 0 && !bytes.Equal(r.OutputSchema, []byte("null")) {
		s, err := sh.decode(r.OutputSchema)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: output_schema: %w", r.Name, err)
		}
		t.OutputSchema = s
	}
	t.Annotations = decodeAnnotations(r.Annotations)
	if o := r.Origin; o != nil {
		t.Origin = &registry.Origin{MCPUpstream: o.MCPUpstream, UpstreamDigest: o.UpstreamDigest}
	}
	if p := r.Pending; p != nil {
		pc, err := decodePending(p)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: pending: %w", r.Name, err)
		}
		t.Pending = pc
	}
	if r.Timeout != "" {
		d, err := time.ParseDuration(r.Timeout)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: timeout: %w", r.Name, err)
		}
		t.Timeout = d
	}
	if len(r.InputSchema) > 0 && !bytes.Equal(r.InputSchema, []byte("null")) {
		s, err := sh.decode(r.InputSchema)
		if err != nil {
			return registry.Tool{}, fmt.Errorf("toolcodec: tool %q: input_schema: %w", r.Name, err)
		}
		t.InputSchema = s
	}
	return t, nil
}

// compactStruct is s as compact protojson: protojson output has
// deliberately unstable whitespace, compacted so equal tools encode to
// equal bytes.
func compactStruct(s *structpb.Struct) (json.RawMessage, error) {
	raw, err := protojson.Marshal(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeAnnotations(a *registry.ToolAnnotations) *annotationsRecord {
	if a == nil {
		return nil
	}
	return &annotationsRecord{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

func decodeAnnotations(a *annotationsRecord) *registry.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &registry.ToolAnnotations{ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive, IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld}
}

func encodePending(p *registry.PendingChange) (*pendingRecord, error) {
	pr := &pendingRecord{Removed: p.Removed, Description: p.Definition.Description, Annotations: encodeAnnotations(p.Definition.Annotations),
		Digest: p.Digest, DetectedAt: p.DetectedAt.UTC()}
	var err error
	if s := p.Definition.InputSchema; s != nil {
		if pr.InputSchema, err = compactStruct(s); err != nil {
			return nil, fmt.Errorf("encode pending input_schema: %w", err)
		}
	}
	if s := p.Definition.OutputSchema; s != nil {
		if pr.OutputSchema, err = compactStruct(s); err != nil {
			return nil, fmt.Errorf("encode pending output_schema: %w", err)
		}
	}
	return pr, nil
}

func decodePending(pr *pendingRecord) (*registry.PendingChange, error) {
	p := &registry.PendingChange{Removed: pr.Removed, Digest: pr.Digest, DetectedAt: pr.DetectedAt,
		Definition: registry.Definition{Description: pr.Description, Annotations: decodeAnnotations(pr.Annotations)}}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  **structpb.Struct
	}{{"input_schema", pr.InputSchema, &p.Definition.InputSchema}, {"output_schema", pr.OutputSchema, &p.Definition.OutputSchema}} {
		if len(f.raw) == 0 || bytes.Equal(f.raw, []byte("null")) {
			continue
		}
		s, err := decodeStruct(f.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = s
	}
	return p, nil
}
