package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/testca"
)

// everyFieldYAML declares every field the tools-file format defines, over
// the two typed backends a file may name.
const everyFieldYAML = `tools:
  - name: get_user
    description: Reads a user.
    input_schema: {type: object, properties: {id: {type: string}}, required: [id]}
    spec:
      http_operation:
        base_url: https://users.example.com/api
        method: GET
        path: /users/{id}
        parameters: [{name: id, in: path}]
        response_schema: {type: object}
      tls: {ca_file: /etc/flowdrop/ca.pem, server_name: users.internal, require: true}
    timeout: 4s
    labels: {team: users}
    annotations: {read_only_hint: true, destructive_hint: false, idempotent_hint: true, open_world_hint: false}
    max_result_bytes: 65536
    output_schema: {type: object, properties: {name: {type: string}}}
    on_invalid_output: pass
  - name: up.search
    description: Searches upstream.
    input_schema: {type: object}
    spec:
      mcp_tool: {url: https://mcp.example.com/mcp, tool: search, credential_env: UPSTREAM_TOKEN}
`

// TestToolsRegisterCarriesEveryField (issue 28 item 9): register -f sends
// every field the file defines — spec, annotations, max_result_bytes,
// output_schema, on_invalid_output — and the gateway stores them: read
// back with get, each tool equals what the file says.
func TestToolsRegisterCarriesEveryField(t *testing.T) {
	t.Parallel()
	addr := startRegistryGateway(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem") // the registry loads it
	if err := os.WriteFile(caFile, testca.New(t).PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(everyFieldYAML, "/etc/flowdrop/ca.pem", caFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errb := ctl(t, "tools", "register", "-f", file, "--addr", addr); code != 0 {
		t.Fatalf("register: exit %d\n%s%s", code, out, errb)
	}
	obj := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	yes, no := true, false
	want := map[string]*gatewayv1.Tool{
		"get_user": {Name: "get_user", Description: "Reads a user.",
			InputSchema: obj(map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}),
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_HttpOperation{HttpOperation: &gatewayv1.HttpOperation{
				BaseUrl: "https://users.example.com/api", Method: "GET", Path: "/users/{id}",
				Parameters:     []*gatewayv1.HttpParameter{{Name: "id", In: gatewayv1.HttpParameterIn_HTTP_PARAMETER_IN_PATH}},
				ResponseSchema: obj(map[string]any{"type": "object"})}},
				Tls: &gatewayv1.TransportSecurity{CaFile: caFile, ServerName: "users.internal", Require: true}},
			Timeout:         durationpb.New(4e9),
			Labels:          map[string]string{"team": "users"},
			Annotations:     &gatewayv1.ToolAnnotations{ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no},
			MaxResultBytes:  65536,
			OutputSchema:    obj(map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}),
			OnInvalidOutput: "pass"},
		"up.search": {Name: "up.search", Description: "Searches upstream.", InputSchema: obj(map[string]any{"type": "object"}),
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{
				Url: "https://mcp.example.com/mcp", Tool: "search", CredentialEnv: "UPSTREAM_TOKEN"}}}},
	}
	for name, w := range want {
		code, out, errb := ctl(t, "tools", "get", name, "--addr", addr)
		if code != 0 {
			t.Fatalf("get %s: exit %d\n%s", name, code, errb)
		}
		got := &gatewayv1.Tool{}
		if err := protojson.Unmarshal([]byte(out), got); err != nil {
			t.Fatalf("get %s: %v\n%s", name, err, out)
		}
		got.Revision = 0
		if diff := cmp.Diff(w, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s as stored differs from the file (-file +stored):\n%s", name, diff)
		}
	}
}

// TestToolsRegisterRefusesUnknownKeys: a misspelt or misplaced key is an
// error naming it, not a field silently dropped.
func TestToolsRegisterRefusesUnknownKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, wantIn, reason string }{
		{"top", "name: a\nbackend: 127.0.0.1:1\nmax_result_byte: 5\n", "max_result_byte", "a misspelt field"},
		{"spec", "name: a\nspec: {mcp_tool: {url: https://x/mcp, tool: t, credential: abc}}\n", "credential", "a key inside spec"},
		{"annotations", "name: a\nbackend: 127.0.0.1:1\nannotations: {readonly: true}\n", "readonly", "a key inside annotations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tool.yaml")
			os.WriteFile(file, []byte(tc.yaml), 0o600)
			code, _, errb := ctl(t, "tools", "register", "-f", file, "--addr", "127.0.0.1:1")
			if code != 2 || !strings.Contains(errb, tc.wantIn) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q (%s)", code, errb, tc.wantIn, tc.reason)
			}
		})
	}
}
