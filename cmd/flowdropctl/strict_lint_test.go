package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/server"
)

// TestStrictLintDefaultProfilesAcceptImports: a gateway under
// --strict-lint with the default profiles (openai, anthropic, gemini)
// starts with the demo tools and admits what the OpenAPI, MCP and gRPC
// importers emit — errors an export rewrite repairs are warnings — and
// still refuses a schema no export can carry, and the one imported
// request message whose constraints Gemini's Schema cannot express.
func TestStrictLintDefaultProfilesAcceptImports(t *testing.T) {
	env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) { c.StrictLint = true }))
	gw := env.Addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// OpenAPI and MCP: the importers register through the gateway.
	if code, out, errOut := ctl(t, "tools", "import", "openapi", "--spec", "testdata/openapi/petstore.yaml", "--base-url", "http://127.0.0.1:9/", "--prefix", "pets_", "--addr", gw); code != 0 {
		t.Fatalf("import openapi under strict lint: exit %d\n%s\n%s", code, out, errOut)
	}
	up := mcpupstreamtest.Start(t)
	if code, out, errOut := ctl(t, "tools", "import", "mcp", "--url", up.URL, "--prefix", "up_", "--addr", gw); code != 0 {
		t.Fatalf("import mcp under strict lint: exit %d\n%s\n%s", code, out, errOut)
	}

	// gRPC: its tool names are <Service>.<Method>, which OpenAI and
	// Anthropic refuse (provider-safe export names are issue 33 item 2);
	// the schemas are what is checked here, registered under names with
	// '_' for '.'.
	notes := notestest.Start(t, true)
	code, out, errOut := ctl(t, "tools", "import", "grpc", "--target", notes.Addr, "--dry-run")
	if code != 0 {
		t.Fatalf("import grpc --dry-run: exit %d\n%s", code, errOut)
	}
	var dry struct{ Tools []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &dry); err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	var refused []string
	for _, raw := range dry.Tools {
		tool := &gatewayv1.Tool{}
		if err := protojson.Unmarshal(raw, tool); err != nil {
			t.Fatal(err)
		}
		tool.Name = strings.ReplaceAll(tool.GetName(), ".", "_")
		_, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool})
		switch {
		case err == nil:
		case status.Code(err) == codes.InvalidArgument && strings.Contains(err.Error(), "provider lint"):
			refused = append(refused, tool.GetName())
			// Only Gemini, and only constraints its Schema lacks: maps'
			// value schemas and key patterns, the oneof exclusion (not),
			// the recursive message ($defs/$ref).
			for _, f := range lintViolations(err) {
				if !strings.HasPrefix(f, "gemini ") {
					t.Errorf("%s refused by %s; want only Gemini's inexpressible constraints", tool.GetName(), f)
				}
			}
		default:
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}
	if want := []string{"NotesService_CreateNote"}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v (Ping and GetNote exportable everywhere)", refused, want)
	}

	// A schema no export repairs: an array without items.
	bad, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"tags": map[string]any{"type": "array"}}})
	_, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{Name: "untyped_tags", InputSchema: bad, Backend: "127.0.0.1:1"}})
	if got := lintViolations(err); status.Code(err) != codes.InvalidArgument || !slices.Contains(got, "openai /properties/tags array-items-required") || !slices.Contains(got, "gemini /properties/tags array-items-required") {
		t.Errorf("an array without items under strict lint: %v %q; want refused for openai and gemini", err, got)
	}
}

// lintViolations are a strict-lint refusal's findings as "profile path rule".
func lintViolations(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, v := range br.GetFieldViolations() {
			// Description: "PROFILE RULE: MESSAGE".
			profile, rest, _ := strings.Cut(v.GetDescription(), " ")
			rule, _, _ := strings.Cut(rest, ":")
			out = append(out, profile+" "+strings.TrimPrefix(v.GetField(), "tool.input_schema")+" "+rule)
		}
	}
	return out
}
