package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/types/known/structpb"
)

// vaultTool marks values sensitive in each supported way: on the property,
// on an enclosing object, on array items and in an allOf branch.
func vaultTool(backend string) registry.Tool {
	schema, _ := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"otp":   map[string]any{"type": "integer", "maximum": 999999, "writeOnly": true},
			"floor": map[string]any{"type": "integer", "minimum": 100000000, "format": "password"},
			"pin":   map[string]any{"type": "string", "format": "password", "pattern": "^[0-9]{4}$", "maxLength": 4},
			"mode":  map[string]any{"enum": []any{1, 2, 3}, "x-sensitive": true},
			"fixed": map[string]any{"const": 42, "x-sensitive": true},
			"step":  map[string]any{"type": "integer", "multipleOf": 7, "x-sensitive": true},
			"label": map[string]any{"type": "string", "x-sensitive": true},
			"creds": map[string]any{"type": "object", "x-sensitive": true, "properties": map[string]any{
				"n": map[string]any{"type": "integer", "maximum": 5},
			}},
			"codes":  map[string]any{"type": "array", "items": map[string]any{"type": "integer", "maximum": 9, "x-sensitive": true}},
			"branch": map[string]any{"allOf": []any{map[string]any{"x-sensitive": true}, map[string]any{"type": "integer", "maximum": 10}}},
			"count":  map[string]any{"type": "integer", "maximum": 10},
		},
	})
	return registry.Tool{Name: "vault", Backend: backend, InputSchema: schema}
}

// TestSensitiveValuesNeverInMessages: a value the schema marks sensitive
// that fails validation appears in no status message or detail, no MCP
// text or _meta, no audit line and no log line; a value not marked
// sensitive is still reported.
func TestSensitiveValuesNeverInMessages(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: audit}
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP(), gatewaytest.WithTool(vaultTool),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})

	cases := []struct {
		name   string
		args   map[string]any
		secret string // must appear nowhere
		reason string
	}{
		{"maximum", map[string]any{"otp": 87654321}, "87654321", "writeOnly: the bound is said, the value is not"},
		{"minimum", map[string]any{"floor": 87654322}, "87654322", "format: password on a number"},
		{"type", map[string]any{"pin": 87654323}, "87654323", "a number where a string is wanted: its kind is said, not its value"},
		{"pattern", map[string]any{"pin": "hunter2x"}, "hunter2x", "a string failing the pattern"},
		{"max-length", map[string]any{"pin": "8765432456"}, "8765432456", "a string over maxLength (nor its length)"},
		{"enum", map[string]any{"mode": 87654325}, "87654325", "enum: neither the value nor the allowed ones"},
		{"const", map[string]any{"fixed": 87654326}, "87654326", "const: neither the value nor the required one"},
		{"multiple-of", map[string]any{"step": 87654327}, "87654327", "a keyword without a message of ours: jsonschema's own wording quotes the value"},
		{"type-bool", map[string]any{"label": true}, "true", "a boolean where a string is wanted"},
		{"nested", map[string]any{"creds": map[string]any{"n": 87654328}}, "87654328", "inside an object marked sensitive"},
		{"array-items", map[string]any{"codes": []any{87654329}}, "87654329", "array items marked sensitive"},
		{"all-of", map[string]any{"branch": 87654330}, "87654330", "marked in one allOf branch, bounded in another"},
	}
	for _, tc := range cases {
		args := gatewaytest.Args(t, tc.args)
		_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "vault", Arguments: args, CallId: "sensitive-" + tc.name})
		st := status.Convert(err)
		if st.Code().String() != "InvalidArgument" {
			t.Fatalf("%s: InvokeTool = %v %q; want InvalidArgument (%s)", tc.name, st.Code(), st.Message(), tc.reason)
		}
		grpcText := prototext.Format(st.Proto())
		for _, d := range st.Details() {
			if m, ok := d.(interface{ String() string }); ok {
				grpcText += m.String()
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vault", Arguments: tc.args})
		if err != nil || !res.IsError {
			t.Fatalf("%s: tools/call = %+v, %v; want an isError result (%s)", tc.name, res, err, tc.reason)
		}
		meta, _ := json.Marshal(res.Meta)
		mcpText := resultText(res) + string(meta)
		for face, text := range map[string]string{"gRPC status": grpcText, "MCP result": mcpText} {
			if containsValue(text, tc.secret) {
				t.Errorf("%s: the %s shows the sensitive value %s (%s):\n%s", tc.name, face, tc.secret, tc.reason, text)
			}
		}
	}

	// A number MCP cannot carry exactly is refused while the arguments are
	// read, before the schema says whether the field is sensitive: the
	// refusal names the path, never the number (nor what it would become).
	inexact := "12345678901234567891"
	res0, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vault", Arguments: map[string]any{"otp": json.Number(inexact)}})
	text := fmt.Sprint(err)
	if res0 != nil {
		text += resultText(res0)
	}
	if (err == nil && (res0 == nil || !res0.IsError)) || !strings.Contains(text, "/otp") || strings.Contains(text, "1234567890123456") {
		t.Errorf("MCP, an inexact number at a sensitive field: %q; want a refusal naming /otp without the number", text)
	}

	// Not sensitive: the value still helps the model.
	_, err = env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "vault", Arguments: gatewaytest.Args(t, map[string]any{"count": 87654399})})
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "got 87654399") {
		t.Errorf("a non-sensitive value failing maximum: %q; want the value reported", msg)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vault", Arguments: map[string]any{"count": 87654399}})
	if err != nil || !strings.Contains(resultText(res), "got 87654399") {
		t.Errorf("MCP, a non-sensitive value failing maximum: %v %v; want the value reported", res, err)
	}

	_, raw := auditLines(t, env, audit) // closes the gateway: every line is written
	logText := logs.String()
	if strings.Contains(logText, "1234567890123456") {
		t.Error("the log shows the inexact sensitive number")
	}
	for _, tc := range cases {
		if containsValue(raw, tc.secret) {
			t.Errorf("%s: the audit log shows the sensitive value %s (%s)", tc.name, tc.secret, tc.reason)
		}
		if containsValue(logText, tc.secret) {
			t.Errorf("%s: the log shows the sensitive value %s (%s)", tc.name, tc.secret, tc.reason)
		}
	}
	if !strings.Contains(raw, "87654399") {
		t.Errorf("the audit log lacks the non-sensitive value 87654399; it must stay useful")
	}
}

// containsValue reports whether text shows v; "true" only as a JSON
// boolean value (after ": " or "got "), since the word itself is common.
func containsValue(text, v string) bool {
	if v != "true" {
		return strings.Contains(text, v)
	}
	return strings.Contains(text, "got true") || strings.Contains(text, `"label":true`)
}
