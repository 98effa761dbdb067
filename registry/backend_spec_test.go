package registry_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/registry"
)

// TestCompileBackendSpec: a tool has exactly one backend — a
// ToolBackendService target or a typed spec — and a gRPC method is admitted
// only when its own stored descriptors resolve it to a unary method.
func TestCompileBackendSpec(t *testing.T) {
	set := notestest.DescriptorSet()
	grpcMethod := func(target, method string, desc []byte) *registry.BackendSpec {
		return &registry.BackendSpec{GRPCMethod: &registry.GRPCMethod{Target: target, Method: method, Descriptors: desc}}
	}
	mcpTool := func(m registry.MCPTool) *registry.BackendSpec { return &registry.BackendSpec{MCPTool: &m} }
	const create = "/flowdrop.testing.v1.NotesService/CreateNote"
	cases := []struct {
		name, reason      string
		backend           string
		spec              *registry.BackendSpec
		wantField, wantIn string // "" wantField: admitted
	}{
		{name: "grpc-method", reason: "a unary method found in its own descriptors is admitted",
			spec: grpcMethod("127.0.0.1:7002", create, set)},
		{name: "both", reason: "backend and spec together are ambiguous: exactly one",
			backend: "127.0.0.1:7001", spec: grpcMethod("127.0.0.1:7002", create, set), wantField: "backend", wantIn: "exactly one"},
		{name: "neither", reason: "no backend at all is refused as before",
			wantField: "backend", wantIn: "must not be empty"},
		{name: "empty-spec", reason: "a spec naming no kind is refused, not treated as a ToolBackendService",
			spec: &registry.BackendSpec{}, wantField: "spec", wantIn: "grpc_method"},
		{name: "mcp-tool", reason: "an upstream MCP tool with an http URL and a credential file reference is admitted",
			spec: mcpTool(registry.MCPTool{URL: "http://127.0.0.1:9/mcp", Tool: "echo", CredentialFile: "/run/up.token"})},
		{name: "mcp-two-kinds", reason: "a spec naming two kinds is ambiguous",
			spec: &registry.BackendSpec{GRPCMethod: &registry.GRPCMethod{Target: "127.0.0.1:7002", Method: create, Descriptors: set},
				MCPTool: &registry.MCPTool{URL: "http://127.0.0.1:9/mcp", Tool: "echo"}}, wantField: "spec", wantIn: "exactly one"},
		{name: "mcp-scheme", reason: "only http and https reach a streamable-HTTP upstream (stdio names a configured process)",
			spec: mcpTool(registry.MCPTool{URL: "ftp://127.0.0.1/mcp", Tool: "echo"}), wantField: "spec.mcp_tool.url", wantIn: "http, https or stdio"},
		{name: "mcp-stdio", reason: "stdio://NAME names a stdio server of the gateway's configuration",
			spec: mcpTool(registry.MCPTool{URL: "stdio://files", Tool: "read_file"})},
		{name: "mcp-stdio-command", reason: "a registration names a configured server, never a command or a path",
			spec: mcpTool(registry.MCPTool{URL: "stdio:///bin/sh", Tool: "echo"}), wantField: "spec.mcp_tool.url", wantIn: "configured stdio server"},
		{name: "mcp-stdio-credential", reason: "a stdio server's environment is the configuration's, not a reference's",
			spec: mcpTool(registry.MCPTool{URL: "stdio://files", Tool: "echo", CredentialEnv: "UP_TOKEN"}), wantField: "spec.mcp_tool.credential_env", wantIn: "no credential"},
		{name: "mcp-stdio-tls", reason: "a local process has no transport to secure",
			spec:      &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: "stdio://files", Tool: "echo"}, TLS: &registry.TransportSecurity{Require: true}},
			wantField: "spec.tls", wantIn: "local process"},
		{name: "mcp-no-url", reason: "an upstream with no URL cannot be called",
			spec: mcpTool(registry.MCPTool{Tool: "echo"}), wantField: "spec.mcp_tool.url", wantIn: "must not be empty"},
		{name: "mcp-userinfo", reason: "a credential in the URL would be shown by every admin read; it belongs in a reference",
			spec: mcpTool(registry.MCPTool{URL: "http://u:secret@127.0.0.1:9/mcp", Tool: "echo"}), wantField: "spec.mcp_tool.url", wantIn: "user info"},
		{name: "mcp-no-tool", reason: "the upstream tool's name is what tools/call sends",
			spec: mcpTool(registry.MCPTool{URL: "http://127.0.0.1:9/mcp"}), wantField: "spec.mcp_tool.tool", wantIn: "must not be empty"},
		{name: "mcp-two-credentials", reason: "two credential references are ambiguous",
			spec:      mcpTool(registry.MCPTool{URL: "http://127.0.0.1:9/mcp", Tool: "echo", CredentialEnv: "UP_TOKEN", CredentialFile: "/run/up.token"}),
			wantField: "spec.mcp_tool.credential_env", wantIn: "at most one"},
		{name: "mcp-relative-file", reason: "a relative credential path would depend on the gateway's working directory",
			spec:      mcpTool(registry.MCPTool{URL: "http://127.0.0.1:9/mcp", Tool: "echo", CredentialFile: "up.token"}),
			wantField: "spec.mcp_tool.credential_file", wantIn: "absolute"},
		{name: "bad-target", reason: "the method's target is checked as backend targets are",
			spec: grpcMethod("notes", create, set), wantField: "spec.grpc_method.target", wantIn: "host:port"},
		{name: "method-form", reason: "a method must be /package.Service/Method",
			spec: grpcMethod("127.0.0.1:7002", "NotesService.CreateNote", set), wantField: "spec.grpc_method.method", wantIn: "/package.Service/Method"},
		{name: "no-such-method", reason: "a method the descriptors do not declare cannot be called",
			spec: grpcMethod("127.0.0.1:7002", "/flowdrop.testing.v1.NotesService/Delete", set), wantField: "spec.grpc_method.method", wantIn: "has no method Delete"},
		{name: "streaming", reason: "a streaming method cannot be a tool",
			spec: grpcMethod("127.0.0.1:7002", "/flowdrop.testing.v1.NotesService/WatchNotes", set), wantField: "spec.grpc_method.method", wantIn: "streaming"},
		{name: "no-descriptors", reason: "descriptors are stored with the revision; without them no call can be built",
			spec: grpcMethod("127.0.0.1:7002", create, nil), wantField: "spec.grpc_method.descriptors", wantIn: "is required"},
		{name: "garbage-descriptors", reason: "bytes that are not a FileDescriptorSet are refused",
			spec: grpcMethod("127.0.0.1:7002", create, []byte{0xff, 0xff}), wantField: "spec.grpc_method.descriptors", wantIn: "FileDescriptorSet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := registry.Tool{Name: "notes.create", Backend: tc.backend, Spec: tc.spec,
				InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}}
			e, err := registry.Compile(tool)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Compile: %v (%s)", err, tc.reason)
				}
				if tc.spec.MCPTool != nil {
					if e.Method != nil {
						t.Errorf("Entry.Method = %v for an MCP tool (%s)", e.Method, tc.reason)
					}
					return
				}
				if e.Method == nil || string(e.Method.FullName()) != "flowdrop.testing.v1.NotesService.CreateNote" {
					t.Errorf("Entry.Method = %v, want the resolved CreateNote (%s)", e.Method, tc.reason)
				}
				return
			}
			var te *registry.ToolError
			if !errors.As(err, &te) || te.Field != tc.wantField || !strings.Contains(te.Reason, tc.wantIn) {
				t.Errorf("Compile: %v, want a ToolError on %s containing %q (%s)", err, tc.wantField, tc.wantIn, tc.reason)
			}
		})
	}
}
