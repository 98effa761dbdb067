package toolcodec

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func nestedSchema(t *testing.T) *structpb.Struct {
	return mustStruct(t, map[string]any{
		"type":     "object",
		"required": []any{"items", "limit"},
		"properties": map[string]any{
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 25},
			"ratio": map[string]any{"type": "number", "minimum": -0.5, "exclusiveMaximum": 1e21, "multipleOf": 0.001},
			"items": map[string]any{
				"type":     "array",
				"maxItems": 3,
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"properties": map[string]any{
						"id":   map[string]any{"type": "string", "pattern": "^[a-z]+$"},
						"tags": map[string]any{"type": []any{"array", "null"}, "default": nil},
					},
				},
			},
			"html": map[string]any{"type": "string", "examples": []any{"Ember &amp; Oak", "<b>\u00e9</b>"}},
		},
	})
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		tool   registry.Tool
	}{
		{
			name:   "minimal",
			reason: "a tool with only a name must decode to exactly that, with no invented fields",
			tool:   registry.Tool{Name: "a"},
		},
		{
			name:   "full",
			reason: "every field (labels, sub-second timeout, revision, nested schema with numbers) must survive storage",
			tool: registry.Tool{
				Name:        "search.docs",
				Description: "Search the docs \u2014 \"quoted\"",
				InputSchema: nestedSchema(t),
				Backend:     "dns:///search:9000",
				Timeout:     1500*time.Millisecond + 7*time.Nanosecond,
				Revision:    42,
				Labels:      map[string]string{"team": "search", "tier": "gold", "": "empty-key"},
			},
		},
		{
			name:   "grpc-method",
			reason: "a typed backend (target, method, descriptor bytes) is stored with the revision and must come back byte for byte",
			tool: registry.Tool{
				Name:        "notes.create",
				InputSchema: &structpb.Struct{},
				Spec: &registry.BackendSpec{GRPCMethod: &registry.GRPCMethod{
					Target: "127.0.0.1:7002", Method: "/flowdrop.testing.v1.NotesService/CreateNote",
					Descriptors: []byte{0x0a, 0x00, 0xff, 0x80}}},
			},
		},
		{
			name:   "mcp-tool",
			reason: "an upstream MCP tool's URL, upstream name and credential reference are stored with the revision",
			tool: registry.Tool{
				Name:        "up.echo",
				InputSchema: &structpb.Struct{},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{
					URL: "http://127.0.0.1:9/mcp", Tool: "echo", CredentialFile: "/etc/flowdrop/up.token"}},
			},
		},
		{
			name:   "empty-schema",
			reason: "an empty object schema is not the same as no schema and must stay non-nil",
			tool:   registry.Tool{Name: "e", InputSchema: &structpb.Struct{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.tool)
			if err != nil {
				t.Fatalf("Encode: %v (%s)", err, tc.reason)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v (%s)", b, err, tc.reason)
			}
			assertToolEqual(t, got, tc.tool, tc.reason)
			again, err := Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(b) {
				t.Errorf("re-encoding differs (%s):\n first %s\nsecond %s", tc.reason, b, again)
			}
		})
	}
}

func assertToolEqual(t *testing.T, got, want registry.Tool, reason string) {
	t.Helper()
	if got.Name != want.Name || got.Description != want.Description || got.Backend != want.Backend ||
		got.Timeout != want.Timeout || got.Revision != want.Revision {
		t.Errorf("scalar fields: got %+v, want %+v (%s)", got, want, reason)
	}
	gs, ws := got.Spec, want.Spec
	if (gs == nil) != (ws == nil) || (gs != nil && ((gs.GRPCMethod == nil) != (ws.GRPCMethod == nil) ||
		(gs.GRPCMethod != nil && (gs.GRPCMethod.Target != ws.GRPCMethod.Target || gs.GRPCMethod.Method != ws.GRPCMethod.Method ||
			!bytes.Equal(gs.GRPCMethod.Descriptors, ws.GRPCMethod.Descriptors))))) {
		t.Errorf("spec: got %+v, want %+v (%s)", gs, ws, reason)
	}
	if !registry.SameDefinition(registry.Tool{Spec: gs, Annotations: got.Annotations}, registry.Tool{Spec: ws, Annotations: want.Annotations}) {
		t.Errorf("spec TLS or annotations: got %+v %+v, want %+v %+v (%s)", gs, got.Annotations, ws, want.Annotations, reason)
	}
	if gs != nil && ws != nil && ((gs.MCPTool == nil) != (ws.MCPTool == nil) || (gs.MCPTool != nil && *gs.MCPTool != *ws.MCPTool)) {
		t.Errorf("spec.mcp_tool: got %+v, want %+v (%s)", gs.MCPTool, ws.MCPTool, reason)
	}
	if (got.InputSchema == nil) != (want.InputSchema == nil) || !proto.Equal(got.InputSchema, want.InputSchema) {
		t.Errorf("input schema: got %v, want %v (%s)", got.InputSchema, want.InputSchema, reason)
	}
	if len(got.Labels) != len(want.Labels) {
		t.Errorf("labels: got %v, want %v (%s)", got.Labels, want.Labels, reason)
	}
	for k, v := range want.Labels {
		if gv, ok := got.Labels[k]; !ok || gv != v {
			t.Errorf("label %q: got %q (present %v), want %q (%s)", k, gv, ok, v, reason)
		}
	}
}

// TestGolden pins the stored format: a change to the encoding must be a
// deliberate version bump, because old data directories must stay readable.
func TestGolden(t *testing.T) {
	tool := registry.Tool{
		Name:        "golden.tool",
		Description: "pinned format",
		InputSchema: mustStruct(t, map[string]any{
			"type":       "object",
			"properties": map[string]any{"n": map[string]any{"type": "number", "maximum": 2.5}},
		}),
		Backend:  "127.0.0.1:7000",
		Timeout:  2 * time.Second,
		Revision: 9,
		Labels:   map[string]string{"k": "v"},
	}
	b, err := Encode(tool)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tool_v1.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Errorf("encoding changed; bump Version if intended\n got %s\nwant %s", b, want)
	}
	got, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	assertToolEqual(t, got, tool, "the golden v1 record must keep decoding")
}

// TestGoldenSpec pins version 2, the record of a tool with a typed
// backend; a tool without one keeps being written as version 1 (TestGolden),
// so older builds keep reading every record they could before.
func TestGoldenSpec(t *testing.T) {
	tool := registry.Tool{
		Name:        "golden.grpc",
		InputSchema: mustStruct(t, map[string]any{"type": "object"}),
		Revision:    3,
		Spec: &registry.BackendSpec{GRPCMethod: &registry.GRPCMethod{
			Target: "127.0.0.1:7002", Method: "/p.S/M", Descriptors: []byte("\x0a\x03a.p")}},
	}
	b, err := Encode(tool)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tool_v2.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Errorf("encoding changed; bump Version if intended\n got %s\nwant %s", b, want)
	}
	got, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	assertToolEqual(t, got, tool, "the golden v2 record must keep decoding")
}

// TestGoldenV3 pins version 3, a record with annotations or transport
// security: older builds refuse it rather than drop a tool's TLS.
func TestGoldenV3(t *testing.T) {
	yes, no := true, false
	tool := registry.Tool{
		Name:        "golden.tls",
		InputSchema: mustStruct(t, map[string]any{"type": "object"}),
		Revision:    4,
		Spec: &registry.BackendSpec{GRPCMethod: &registry.GRPCMethod{Target: "dns:///notes:7002", Method: "/p.S/M", Descriptors: []byte("\x0a\x03a.p")},
			TLS: &registry.TransportSecurity{CAFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", ServerName: "notes", Require: true}},
		Annotations: &registry.ToolAnnotations{IdempotentHint: &yes, DestructiveHint: &no},
	}
	b, err := Encode(tool)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tool_v3.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Errorf("encoding changed; bump Version if intended\n got %s\nwant %s", b, want)
	}
	got, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	assertToolEqual(t, got, tool, "the golden v3 record must keep decoding")
	if !got.Idempotent() || got.Annotations.ReadOnlyHint != nil {
		t.Errorf("annotations: got %+v, want idempotent set, read-only unset (an unset hint must stay unset, not false)", got.Annotations)
	}
	plain := registry.Tool{Name: "a", Backend: "127.0.0.1:1", Annotations: &registry.ToolAnnotations{IdempotentHint: &yes}}
	if b, _ := Encode(plain); !strings.HasPrefix(string(b), `{"v":3,`) {
		t.Errorf("a plain tool with annotations encoded as %s, want version 3 (older builds must refuse it, not drop the marker)", b)
	}
}

// TestGoldenV4 pins version 4, an imported tool's record (its origin and
// a pending upstream change): older builds refuse it rather than drop the
// origin, which would let the upstream change the tool unapproved.
func TestGoldenV4(t *testing.T) {
	no := false
	tool := registry.Tool{
		Name:        "golden.imported",
		Description: "Adds items.",
		InputSchema: mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{"mode": map[string]any{"enum": []any{"safe"}}}}),
		Revision:    9,
		Spec:        &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "http://127.0.0.1:9/mcp", Tool: "add_items"}},
		Origin:      &registry.Origin{MCPUpstream: "http://127.0.0.1:9/mcp", UpstreamDigest: strings.Repeat("ab", 32)},
		Pending: &registry.PendingChange{
			Definition: registry.Definition{Description: "Call fetch first.", InputSchema: mustStruct(t, map[string]any{"type": "object"}),
				OutputSchema: mustStruct(t, map[string]any{"type": "object"}), Annotations: &registry.ToolAnnotations{DestructiveHint: &no}},
			Digest: strings.Repeat("cd", 32), DetectedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
	}
	b, err := Encode(tool)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tool_v4.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Errorf("encoding changed; bump Version if intended\n got %s\nwant %s", b, want)
	}
	got, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	assertToolEqual(t, got, tool, "the golden v4 record must keep decoding")
	if got.Origin == nil || *got.Origin != *tool.Origin {
		t.Errorf("origin: got %+v, want %+v", got.Origin, tool.Origin)
	}
	gp, wp := got.Pending, tool.Pending
	if gp == nil || gp.Removed != wp.Removed || gp.Digest != wp.Digest || !gp.DetectedAt.Equal(wp.DetectedAt) || !gp.Definition.Equal(wp.Definition) {
		t.Errorf("pending: got %+v, want %+v", gp, wp)
	}
	removed := tool
	removed.Pending = &registry.PendingChange{Removed: true, Digest: registry.DigestRemoved, DetectedAt: wp.DetectedAt}
	b, _ = Encode(removed)
	if got, err := Decode(b); err != nil || got.Pending == nil || !got.Pending.Removed || got.Pending.Definition.InputSchema != nil {
		t.Errorf("a pending removal round-trips as %+v, %v; want removed with no definition", got.Pending, err)
	}
	plain := registry.Tool{Name: "a", Backend: "127.0.0.1:1", Annotations: &registry.ToolAnnotations{DestructiveHint: &no}}
	if b, _ := Encode(plain); !strings.HasPrefix(string(b), `{"v":3,`) {
		t.Errorf("a tool that is not imported encoded as %s, want version 3 still (older builds read it)", b)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, in, wantSub, reason string
	}{
		{"not-json", `{`, "toolcodec: decode", "corrupt bytes must be reported, not decoded to a zero tool"},
		{"no-version", `{"name":"x"}`, `tool "x": unsupported format version 0`, "a record without a version is not ours"},
		{"future-version", `{"v":5,"name":"x"}`, "unsupported format version 5", "a newer format must be refused rather than misread"},
		{"bad-pending-schema", `{"v":4,"name":"x","origin":{"mcp_upstream":"http://u"},"pending":{"input_schema":[1],"digest":"d","detected_at":"2026-01-02T03:04:05Z"}}`,
			`tool "x": pending: input_schema`, "a pending change's schema must be a JSON object, named"},
		{"bad-timeout", `{"v":1,"name":"x","timeout":"soon"}`, `tool "x": timeout`, "the error must name the field"},
		{"schema-not-object", `{"v":1,"name":"x","input_schema":[1]}`, `tool "x": input_schema`, "the schema must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantSub) {
				t.Errorf("Decode(%s) = %v, want error containing %q (%s)", tc.in, err, tc.wantSub, tc.reason)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	t := &testing.T{}
	enc, err := Encode(registry.Tool{Name: "bench", InputSchema: nestedSchema(t), Labels: map[string]string{"a": "b"}, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGoldenHTTPOperation holds an HTTP-operation tool's v2 record (the
// parts by name, the response schema as JSON) and its round trip.
func TestGoldenHTTPOperation(t *testing.T) {
	tool := registry.Tool{
		Name:        "golden.http",
		InputSchema: mustStruct(t, map[string]any{"type": "object"}),
		Revision:    4,
		Spec: &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{
			BaseURL: "http://127.0.0.1:8080/api", Method: "POST", Path: "/pets/{id}",
			Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}, {Name: "q", In: registry.HTTPInQuery},
				{Name: "X-Note", In: registry.HTTPInHeader}, {Name: "name", In: registry.HTTPInBody}},
			ResponseSchema: mustStruct(t, map[string]any{"type": "object"})}},
	}
	b, err := Encode(tool)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tool_v2_http.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Errorf("encoding changed; bump Version if intended\n got %s\nwant %s", b, want)
	}
	got, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	assertToolEqual(t, got, tool, "the golden v2 HTTP record must keep decoding")
	if _, err := Decode([]byte(strings.Replace(string(want), `"in":"query"`, `"in":"cookie"`, 1))); err == nil || !strings.Contains(err.Error(), "cookie") {
		t.Errorf("Decode of an unknown part: %v, want a refusal naming it", err)
	}
}
