package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// TestCompileRefusesOversizedTools: the registry's own bounds on a
// description and each schema hold for every path that compiles a tool
// (RegisterTool, seeds, imports, the follower), naming the field.
func TestCompileRefusesOversizedTools(t *testing.T) {
	big := `{"type":"object","properties":{"q":{"type":"string","description":"` + strings.Repeat("x", registry.MaxSchemaBytes) + `"}}}`
	cases := []struct {
		name, reason, field string
		tool                registry.Tool
		ok                  bool
	}{
		{name: "description-at-bound", reason: "exactly the bound is admitted", ok: true,
			tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1", Description: strings.Repeat("d", registry.MaxDescriptionBytes), InputSchema: schema(t, okSchema)}},
		{name: "description-over", reason: "one byte over the bound is refused", field: "description",
			tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1", Description: strings.Repeat("d", registry.MaxDescriptionBytes+1), InputSchema: schema(t, okSchema)}},
		{name: "input-schema-over", reason: "an input schema over the bound is refused before it compiles", field: "input_schema",
			tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1", InputSchema: schema(t, big)}},
		{name: "output-schema-over", reason: "an output schema over the bound is refused", field: "output_schema",
			tool: registry.Tool{Name: "t", Backend: "127.0.0.1:1", InputSchema: schema(t, okSchema), OutputSchema: schema(t, big)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Compile(tc.tool)
			if tc.ok {
				if err != nil {
					t.Fatalf("%v (%s)", err, tc.reason)
				}
				return
			}
			var te *registry.ToolError
			if !errors.As(err, &te) || te.Field != tc.field || !strings.Contains(te.Reason, "at most") {
				t.Fatalf("err %v; want a ToolError on %s naming the bound (%s)", err, tc.field, tc.reason)
			}
		})
	}
}
