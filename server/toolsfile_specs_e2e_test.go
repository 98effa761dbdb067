package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/server"
)

// TestToolsFileDeclaresEveryKind: a gateway seeded from a tools file serves
// an upstream MCP server's tool and an HTTP operation declared there (spec,
// as over the gRPC API).
func TestToolsFileDeclaresEveryKind(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := mcpupstreamtest.Start(t)
	pets := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "verbose": r.URL.Query().Get("verbose")})
	}))
	t.Cleanup(pets.Close)
	file := filepath.Join(t.TempDir(), "tools.yaml")
	yaml := fmt.Sprintf(`tools:
  - name: greet
    spec: {mcp_tool: {url: %q, tool: "say hello"}}
    input_schema: {type: object, properties: {name: {type: string}}}
  - name: pets.get
    spec:
      http_operation:
        base_url: %q
        method: GET
        path: "/pets/{petId}"
        parameters: [{name: petId, in: path}, {name: verbose, in: query}]
    input_schema:
      type: object
      required: [petId]
      properties: {petId: {type: string}, verbose: {type: boolean}}
`, up.URL, pets.URL)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) { c.ToolsFile = file }))

	resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "greet", Arguments: gatewaytest.Args(t, map[string]any{"name": "Ada"})})
	if err != nil || resp.GetResult().GetStringValue() != "hello\nAda" {
		t.Fatalf("greet (mcp_tool from the tools file): %v, %v; want \"hello\\nAda\"", resp.GetResult(), err)
	}
	resp, err = env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "pets.get",
		Arguments: gatewaytest.Args(t, map[string]any{"petId": "p-7", "verbose": true})})
	if err != nil {
		t.Fatalf("pets.get (http_operation from the tools file): %v", err)
	}
	got := resp.GetResult().GetStructValue().AsMap()
	if got["path"] != "/pets/p-7" || got["verbose"] != "true" {
		t.Errorf("pets.get reached the API as %v; want path /pets/p-7, verbose=true", got)
	}
}
