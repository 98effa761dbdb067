package registry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/toolproto"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// kindRow is one backend kind's example: a tool of that kind as an admin
// registers it, what Target and the operator's view show, and what a
// caller who does not see backends must never read.
type kindRow struct {
	reason string
	tool   registry.Tool
	// target is Tool.Target; title and operatorTarget registry.OperatorView's.
	target, title, operatorTarget string
	// secret are addresses, credential references and host paths that
	// WithoutAddresses must remove (and operatorTarget never shows, but
	// for the target itself).
	secret []string
	// fileRefused, when set, is in the tools file's refusal: the kind is
	// not declared there.
	fileRefused string
}

func kindRows(t *testing.T) map[registry.Kind]kindRow {
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"petId": map[string]any{"type": "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	tool := func(name string, backend string, spec *registry.BackendSpec) registry.Tool {
		return registry.Tool{Name: name, Description: "d", InputSchema: schema, Backend: backend, Spec: spec, Timeout: 2 * time.Second,
			Labels: map[string]string{"team": "t"}}
	}
	const create = "/flowdrop.testing.v1.NotesService/CreateNote"
	return map[registry.Kind]kindRow{
		registry.KindToolBackendService: {reason: "a ToolBackendService: the backend field, no spec",
			tool:   tool("k.tbs", "127.0.0.1:7001", nil),
			target: "127.0.0.1:7001", title: "ToolBackendService", operatorTarget: "127.0.0.1:7001"},
		registry.KindGRPCMethod: {reason: "a gRPC method with its descriptors and TLS file paths",
			tool: tool("k.grpc", "", &registry.BackendSpec{
				GRPCMethod: &registry.GRPCMethod{Target: "127.0.0.1:7002", Method: create, Descriptors: notestest.DescriptorSet()},
				TLS:        &registry.TransportSecurity{CAFile: "/etc/flowdrop/ca.pem", ServerName: "notes.internal", Require: true}}),
			target: "127.0.0.1:7002", title: "gRPC method " + create, operatorTarget: "127.0.0.1:7002",
			secret: []string{"127.0.0.1:7002", "/etc/flowdrop/ca.pem", "notes.internal"}, fileRefused: "import grpc"},
		registry.KindHTTPOperation: {reason: "an HTTP operation with every part of a request mapped and a response schema",
			tool: tool("k.http", "", &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{BaseURL: "https://pets.internal/v1", Method: "GET",
				Path: "/pets/{petId}", Parameters: []registry.HTTPParameter{{Name: "petId", In: registry.HTTPInPath}, {Name: "verbose", In: registry.HTTPInQuery},
					{Name: "X-Trace", In: registry.HTTPInHeader}},
				ResponseSchema: schema}}),
			target: "https://pets.internal/v1", title: "HTTP GET /pets/{petId}", operatorTarget: "https://pets.internal/v1",
			secret: []string{"pets.internal"}},
		registry.KindMCPTool: {reason: "an upstream MCP tool with a credential file and a query on its URL",
			tool: tool("k.mcp", "", &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "https://mcp.internal/mcp?tenant=acme-7", Tool: "forecast",
				CredentialFile: "/etc/flowdrop/weather.token"}, TLS: &registry.TransportSecurity{Require: true}}),
			target: "https://mcp.internal/mcp?tenant=acme-7", title: "MCP tool forecast", operatorTarget: "https://mcp.internal/mcp",
			secret: []string{"mcp.internal", "acme-7", "/etc/flowdrop/weather.token"}},
		registry.KindAlias: {reason: "an alias with a fixed and an injected argument: no target of its own; an invoker learns neither its target nor what it sets",
			tool: tool("k.alias", "", &registry.BackendSpec{Alias: &registry.Alias{Target: "k.tbs",
				Fixed: map[string]any{"tenant_fixed": "acme-9"}, Injected: map[string]string{"owner": "claim:owner_id"}}}),
			title: "alias of k.tbs", secret: []string{"k.tbs", "acme-9", "claim:owner_id"}},
	}
}

// TestEveryKindRoundTrips: every kind the registry lists has a row here
// (a new kind without one fails, as connect-go's code_test does for codes)
// and its tool is admitted, names its target, shows operators its kind and
// a target without query or credential reference, round-trips through the
// stored form (toolcodec), the tools file (the stored form of its spec is
// the file's) and the gRPC admin conversion over the wire (toolproto), and
// hides every address from a caller who does not see backends.
func TestEveryKindRoundTrips(t *testing.T) {
	rows := kindRows(t)
	if len(registry.Kinds()) != len(rows) {
		t.Errorf("registry lists %d kinds, this table has %d rows", len(registry.Kinds()), len(rows))
	}
	for _, k := range registry.Kinds() {
		row, ok := rows[k]
		if !ok {
			t.Errorf("kind %s has no row: add one to kindRows", k)
			continue
		}
		t.Run(k.String(), func(t *testing.T) {
			tool := row.tool
			if got, err := registry.KindOf(&tool); got != k || err != nil {
				t.Fatalf("KindOf = %v, %v; want %s (%s)", got, err, k, row.reason)
			}
			if _, err := registry.Compile(tool); err != nil {
				t.Fatalf("Compile: %v (%s)", err, row.reason)
			}
			if got := tool.Target(); got != row.target {
				t.Errorf("Target() = %q, want %q", got, row.target)
			}
			title, target := registry.OperatorView(&tool)
			if title != row.title || target != row.operatorTarget {
				t.Errorf("OperatorView = %q, %q; want %q, %q", title, target, row.title, row.operatorTarget)
			}

			// The stored form.
			b, err := toolcodec.Encode(tool)
			if err != nil {
				t.Fatal(err)
			}
			back, err := toolcodec.Decode(b)
			if err != nil {
				t.Fatalf("toolcodec.Decode: %v", err)
			}
			if !registry.SameDefinition(back, tool) {
				t.Errorf("toolcodec round trip changed the tool:\n got %+v\nwant %+v", back.Spec, tool.Spec)
			}

			// The tools file: the record's spec is the file's spec.
			var rec struct {
				Spec json.RawMessage `json:"spec"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			schemaJSON, _ := protojson.Marshal(tool.InputSchema)
			entry := map[string]any{"name": tool.Name, "description": tool.Description, "input_schema": json.RawMessage(schemaJSON),
				"timeout": tool.Timeout.String(), "labels": tool.Labels}
			if tool.Spec == nil {
				entry["backend"] = tool.Backend
			} else {
				entry["spec"] = rec.Spec
			}
			file, _ := json.Marshal(map[string]any{"tools": []any{entry}})
			loaded, err := registry.ParseTools(file, "kinds.json")
			switch {
			case row.fileRefused != "":
				if err == nil || !strings.Contains(err.Error(), row.fileRefused) {
					t.Errorf("tools file: %v, want a refusal naming %q", err, row.fileRefused)
				}
			case err != nil:
				t.Errorf("tools file: %v", err)
			case len(loaded) != 1 || !registry.SameDefinition(loaded[0], tool):
				t.Errorf("tools file round trip changed the tool:\n got %+v\nwant %+v", loaded, tool)
			}

			// The gRPC admin conversion, over the wire.
			wire, err := proto.Marshal(toolproto.ToProto(tool))
			if err != nil {
				t.Fatal(err)
			}
			var p gatewayv1.Tool
			if err := proto.Unmarshal(wire, &p); err != nil {
				t.Fatal(err)
			}
			if tool.Spec != nil {
				if m := p.GetSpec().ProtoReflect().WhichOneof(p.GetSpec().ProtoReflect().Descriptor().Oneofs().ByName("kind")); m == nil || string(m.Name()) != k.String() {
					t.Errorf("contract oneof member %v, want %s: the kind's name is its oneof member's", m, k)
				}
			}
			fromAPI, err := toolproto.FromProto(&p)
			if err != nil {
				t.Fatal(err)
			}
			if !registry.SameDefinition(fromAPI, tool) {
				t.Errorf("gRPC admin round trip changed the tool:\n got %+v\nwant %+v", fromAPI.Spec, tool.Spec)
			}

			// A caller who does not see backends.
			hidden := toolproto.SpecProto(tool.Spec.WithoutAddresses())
			text := protojson.Format(hidden)
			for _, s := range row.secret {
				if strings.Contains(text, s) {
					t.Errorf("hidden spec %s shows %q", text, s)
				}
				if s != row.target && !strings.Contains(row.target, s) && strings.Contains(target, s) {
					t.Errorf("operator target %q shows %q", target, s)
				}
			}
			if strings.Contains(target, "acme-7") || strings.Contains(target, "/etc/") {
				t.Errorf("operator target %q shows a query or a host path", target)
			}
			if tool.Spec != nil && (tool.Spec.WithoutAddresses() == tool.Spec || registry.BackendLine(&tool) == "") {
				t.Error("WithoutAddresses must copy; BackendLine must name the backend")
			}
			if again, _ := registry.KindOf(&tool); again != k || tool.Target() != row.target {
				t.Error("hiding changed the stored tool")
			}
		})
	}
}

// TestUnknownKindFailsClosed: a spec naming no kind, two kinds, or a kind
// this build does not know is refused everywhere it can be read — the
// registry, the stored form, the tools file, the gRPC admin conversion —
// with the typed error, never read as some default kind or dropped.
func TestUnknownKindFailsClosed(t *testing.T) {
	var uk *registry.UnknownKindError
	empty := registry.Tool{Name: "x", Spec: &registry.BackendSpec{}}
	if _, err := registry.KindOf(&empty); !errors.As(err, &uk) || uk.Tool != "x" {
		t.Errorf("KindOf(empty spec) = %v, want an *UnknownKindError naming the tool", err)
	}
	if empty.Target() != "" {
		t.Errorf("Target() of no kind = %q, want \"\"", empty.Target())
	}
	if title, target := registry.OperatorView(&empty); title != "unknown backend kind" || target != "" {
		t.Errorf("OperatorView of no kind = %q, %q", title, target)
	}
	two := registry.Tool{Name: "x", Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "http://127.0.0.1:1/mcp", Tool: "t"},
		HTTPOperation: &registry.HTTPOperation{BaseURL: "http://127.0.0.1:1", Method: "GET", Path: "/"}}}
	if _, err := registry.KindOf(&two); !errors.As(err, &uk) || !strings.Contains(err.Error(), "two") {
		t.Errorf("KindOf(two kinds) = %v, want an *UnknownKindError saying two", err)
	}
	if _, err := toolcodec.Encode(two); !errors.As(err, &uk) {
		t.Errorf("toolcodec.Encode(two kinds) = %v, want an *UnknownKindError, not a record of both", err)
	}
	if _, err := toolcodec.Decode([]byte(`{"v":2,"name":"x","spec":{"smtp_relay":{"host":"mail:25"}}}`)); !errors.As(err, &uk) || uk.Name != "smtp_relay" {
		t.Errorf("toolcodec.Decode(unknown kind) = %v, want an *UnknownKindError naming smtp_relay (an older build must not drop a newer kind)", err)
	}
	file := `{"tools":[{"name":"x","input_schema":{"type":"object"},"spec":{"smtp_relay":{"host":"mail:25"}}}]}`
	if _, err := registry.ParseTools([]byte(file), "f.json"); !errors.As(err, &uk) || uk.Name != "smtp_relay" {
		t.Errorf("tools file with an unknown kind: %v, want an *UnknownKindError naming smtp_relay", err)
	}
	fromAPI := toolproto.SpecFromProto(&gatewayv1.BackendSpec{Tls: &gatewayv1.TransportSecurity{Require: true}})
	if _, err := registry.KindOf(&registry.Tool{Spec: fromAPI}); !errors.As(err, &uk) {
		t.Errorf("a contract spec with no oneof member: KindOf = %v, want an *UnknownKindError", err)
	}
	var te *registry.ToolError
	for _, tool := range []registry.Tool{empty, two} {
		tool.InputSchema = &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
		if _, err := registry.Compile(tool); !errors.As(err, &te) || te.Field != "spec" {
			t.Errorf("Compile(%+v) = %v, want a ToolError on spec", tool.Spec, err)
		}
	}
}
