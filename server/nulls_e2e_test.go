package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// planEventSchema has optional properties at the root, in a nested object
// and in array items, and one optional property that admits null.
const planEventSchema = `{
  "type": "object", "additionalProperties": false, "required": ["title"],
  "properties": {
    "title": {"type": "string"},
    "where": {"type": "object", "additionalProperties": false, "required": ["room"],
              "properties": {"room": {"type": "string"}, "floor": {"type": "integer"}}},
    "attendees": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["email"],
                  "properties": {"email": {"type": "string"}, "name": {"type": "string"}}}},
    "note": {"type": ["string", "null"]},
    "tags": {"type": "array", "items": {"type": "string"}}
  }}`

func planEventTool(backend string) registry.Tool {
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(planEventSchema)); err != nil {
		panic(err)
	}
	return registry.Tool{Name: "plan_event", Description: "Plan an event.", Backend: backend, InputSchema: &s}
}

// strictModelCall is what a model in OpenAI strict mode sends for
// plan_event: every property present, null for those it does not give.
const strictModelCall = `{"title": "Launch", "where": {"room": "A1", "floor": null},
  "attendees": [{"email": "a@example.com", "name": null}], "note": null, "tags": null}`

// droppedPointers are the optional properties strictModelCall sends null
// for whose schema refuses null (note admits it and keeps its null), and
// how a refusal's text names them for a model.
var (
	droppedPointers = []string{"/attendees/0/name", "/tags", "/where/floor"}
	droppedNames    = map[string]string{"/attendees/0/name": "`attendees[0].name`", "/tags": "`tags`", "/where/floor": "`where.floor`"}
)

// TestOptionalNullsRoundTrip: export openai-strict from the gateway, send
// a call as a strict-mode model does (null for the optional properties it
// does not give, which the exported schema requires), over gRPC InvokeTool
// and MCP tools/call. With normalize.optional_nulls: drop the call is
// accepted: the nulls are gone before the backend (what it received is
// checked), the repairs name each pointer, and a null the schema admits
// stays. Without it (the default) the call is refused naming each pointer
// and the backend is not called. The export itself says which tools the
// gateway would refuse such nulls for (a per-tool keep included).
func TestOptionalNullsRoundTrip(t *testing.T) {
	t.Parallel()
	start := func(nulls policy.OptionalNullsConfig) *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(planEventTool),
			gatewaytest.WithBackendHandler("plan_event", func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
				return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(req.GetArguments())}, nil
			}),
			gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Normalize.OptionalNulls = nulls }))
	}
	drop := start(policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop,
		Tools: []policy.ToolOptionalNulls{{Match: "create_*", Mode: policy.OptionalNullsKeep}}})
	keep := start(policy.OptionalNullsConfig{})

	var sent map[string]any
	if err := json.Unmarshal([]byte(strictModelCall), &sent); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Launch", "where": map[string]any{"room": "A1"},
		"attendees": []any{map[string]any{"email": "a@example.com"}}, "note": nil}

	cases := []struct {
		name, reason string
		env          *gatewaytest.Env
		accepted     bool
		refusedTools []string // the export's optional_nulls_refused
	}{
		{name: "drop", reason: "optional_nulls: drop: the nulls are removed and reported; create_* kept by its override",
			env: drop, accepted: true, refusedTools: []string{"create_note"}},
		{name: "keep", reason: "the default refuses the nulls, naming each pointer; the export names every tool with an optional property refusing null",
			env: keep, refusedTools: []string{"create_note", "plan_event", "run_command"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			resp, err := gatewayv1.NewToolRegistryServiceClient(tc.env.Conn).ExportTools(ctx, &gatewayv1.ExportToolsRequest{Format: "openai-strict"})
			if err != nil {
				t.Fatalf("ExportTools: %v", err)
			}
			if got := resp.GetOptionalNullsRefused(); !slices.Equal(got, tc.refusedTools) {
				t.Errorf("optional_nulls_refused %v, want %v (%s)", got, tc.refusedTools, tc.reason)
			}
			checkStrictCall(t, resp.GetToolsJson(), "plan_event", sent)

			t.Run("grpc", func(t *testing.T) {
				before := len(tc.env.Backend.CallsFor("plan_event"))
				res, err := tc.env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "plan_event", Arguments: gatewaytest.Args(t, sent)})
				calls := tc.env.Backend.CallsFor("plan_event")[before:]
				if !tc.accepted {
					br, _, _ := invalidDetails(t, err)
					var fields []string
					for _, v := range br.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
					for _, p := range droppedPointers {
						if !slices.Contains(fields, p) || !strings.Contains(status.Convert(err).Message(), droppedNames[p]+" must be") {
							t.Errorf("refusal %q (violations %v) does not name %s (%s)", status.Convert(err).Message(), fields, p, tc.reason)
						}
					}
					if len(calls) != 0 {
						t.Errorf("the backend was called (%s)", tc.reason)
					}
					return
				}
				if err != nil {
					t.Fatalf("InvokeTool: %v (%s)", err, tc.reason)
				}
				if len(calls) != 1 || !proto.Equal(calls[0].Request.GetArguments(), gatewaytest.Args(t, want)) {
					t.Fatalf("backend received %v, want %v (%s)", calls, want, tc.reason)
				}
				var got []string
				for _, r := range res.GetRepairs() {
					if r.GetKind() != gatewayv1.RepairKind_REPAIR_KIND_NULL_DROPPED {
						t.Errorf("repair kind %v at %s, want REPAIR_KIND_NULL_DROPPED", r.GetKind(), r.GetPath())
					}
					got = append(got, r.GetPath())
				}
				if !slices.Equal(got, droppedPointers) {
					t.Errorf("repairs at %v, want %v (%s)", got, droppedPointers, tc.reason)
				}
			})
			t.Run("mcp", func(t *testing.T) {
				cs := mustConnect(t, ctx, tc.env.MCPURL, mcpClientOpts{})
				before := len(tc.env.Backend.CallsFor("plan_event"))
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plan_event", Arguments: json.RawMessage(strictModelCall)})
				if err != nil {
					t.Fatalf("tools/call: %v", err)
				}
				calls := tc.env.Backend.CallsFor("plan_event")[before:]
				if !tc.accepted {
					var violations []struct{ Path string }
					metaJSON(t, res.Meta[mcpapi.MCPMetaViolations], &violations)
					var paths []string
					for _, v := range violations {
						paths = append(paths, v.Path)
					}
					for _, p := range droppedPointers {
						if !res.IsError || !slices.Contains(paths, p) || !strings.Contains(resultText(res), droppedNames[p]+" must be") {
							t.Errorf("isError %v, violations %v, text %q: want %s named (%s)", res.IsError, paths, resultText(res), p, tc.reason)
						}
					}
					if len(calls) != 0 {
						t.Errorf("the backend was called (%s)", tc.reason)
					}
					return
				}
				if res.IsError || len(calls) != 1 || !proto.Equal(calls[0].Request.GetArguments(), gatewaytest.Args(t, want)) {
					t.Fatalf("isError %v (%s), backend received %v, want %v (%s)", res.IsError, resultText(res), calls, want, tc.reason)
				}
				var repairs []struct{ Path, Kind string }
				metaJSON(t, res.Meta[mcpapi.MCPMetaRepairs], &repairs)
				var got []string
				for _, r := range repairs {
					if r.Kind != "null-dropped" {
						t.Errorf("repair kind %q at %s, want null-dropped", r.Kind, r.Path)
					}
					got = append(got, r.Path)
				}
				if !slices.Equal(got, droppedPointers) {
					t.Errorf("_meta repairs at %v, want %v (%s)", got, droppedPointers, tc.reason)
				}
			})
		})
	}
}

// checkStrictCall holds the test's model call to what the exported
// openai-strict definition of tool requires, so the call is one a model
// following that document sends (every property present; nulls for the
// optional ones).
func checkStrictCall(t *testing.T, doc, tool string, call map[string]any) {
	t.Helper()
	var defs []struct {
		Function struct {
			Name       string
			Strict     bool
			Parameters map[string]any
		}
	}
	if err := json.Unmarshal([]byte(doc), &defs); err != nil {
		t.Fatalf("tools_json: %v", err)
	}
	for _, d := range defs {
		if d.Function.Name != tool {
			continue
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem:///strict.json", d.Function.Parameters); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("mem:///strict.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(call); err != nil {
			t.Fatalf("the call is not what the exported strict schema asks for: %v", err)
		}
		if !d.Function.Strict {
			t.Errorf("%s exported without strict: true", tool)
		}
		return
	}
	t.Fatalf("%s is not in the export", tool)
}

// metaJSON decodes an MCP _meta value (as the client received it) into v.
func metaJSON(t *testing.T, m any, v any) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("_meta %s: %v", b, err)
	}
}

// TestOptionalNullsAuditAndMetrics: the dropped nulls are repairs like any
// other: the audit line lists each (kind null-dropped, its pointer) with the
// arguments as sent (nulls included) and as forwarded (without them), and
// flowdrop_repairs_total counts them by kind.
func TestOptionalNullsAuditAndMetrics(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env := gatewaytest.Start(t, gatewaytest.WithAdmin(), gatewaytest.WithTool(planEventTool),
		gatewaytest.WithBackendHandler("plan_event", func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(req.GetArguments())}, nil
		}),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.Audit = server.AuditConfig{Path: path}
			c.Policy.Normalize.OptionalNulls = policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}
		}))
	var sent map[string]any
	if err := json.Unmarshal([]byte(strictModelCall), &sent); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "plan_event", Arguments: gatewaytest.Args(t, sent)}); err != nil {
		t.Fatalf("InvokeTool: %v", err)
	}
	if got := sample(scrape(t, env.AdminURL), "flowdrop_repairs_total", map[string]string{"tool": "plan_event", "kind": "null-dropped"}); got != float64(len(droppedPointers)) {
		t.Errorf(`flowdrop_repairs_total{tool="plan_event",kind="null-dropped"} = %v, want %d`, got, len(droppedPointers))
	}
	lines, _ := auditLines(t, env, path)
	if len(lines) != 1 {
		t.Fatalf("%d audit lines, want 1", len(lines))
	}
	line := lines[0]
	var repairs []string
	for _, r := range line["repairs"].([]any) {
		m := r.(map[string]any)
		repairs = append(repairs, m["kind"].(string)+":"+m["path"].(string))
	}
	var want []string
	for _, p := range droppedPointers {
		want = append(want, "null-dropped:"+p)
	}
	if !slices.Equal(repairs, want) {
		t.Errorf("audit repairs %v, want %v", repairs, want)
	}
	asSent, _ := json.Marshal(line["args_sent"])
	repaired, _ := json.Marshal(line["args_repaired"])
	if !strings.Contains(string(asSent), `"tags":null`) || strings.Contains(string(repaired), `"tags"`) || !strings.Contains(string(repaired), `"note":null`) {
		t.Errorf("args_sent %s, args_repaired %s: want the nulls as sent, and forwarded without the dropped ones (note's kept)", asSent, repaired)
	}
}

// TestPolicyFileOptionalNulls: normalize.optional_nulls and its per-tool
// overrides (normalize.tools) are read from the policy file, and a bad
// value is refused naming the key.
func TestPolicyFileOptionalNulls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reason, file, wantErr string
		want                        policy.OptionalNullsConfig
	}{
		{name: "default", reason: "absent means keep: outside RT-TOOL-8, off by default", file: "auth: {mode: off}\n"},
		{name: "drop", reason: "the option on", file: "auth: {mode: off}\nnormalize: {optional_nulls: drop}\n",
			want: policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}},
		{name: "overrides", reason: "per-tool overrides in rate_limit.tools' style",
			file: "auth: {mode: off}\nnormalize: {optional_nulls: drop, tools: [{match: \"legacy_*\", optional_nulls: keep}]}\n",
			want: policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop, Tools: []policy.ToolOptionalNulls{{Match: "legacy_*", Mode: policy.OptionalNullsKeep}}}},
		{name: "typo", reason: "a misspelt value must not silently keep or drop", file: "auth: {mode: off}\nnormalize: {optional_nulls: remove}\n",
			wantErr: "normalize.optional_nulls"},
		{name: "bad-glob", reason: "an override's glob is checked at load", file: "auth: {mode: off}\nnormalize: {tools: [{match: \"[\", optional_nulls: drop}]}\n",
			wantErr: "normalize.tools[0]"},
		{name: "unknown-key", reason: "unknown keys in an override are refused", file: "auth: {mode: off}\nnormalize: {tools: [{match: x, on_entity_bound: forward}]}\n",
			wantErr: "on_entity_bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := server.ParsePolicy([]byte(tc.file), "test.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(p.Normalize.OptionalNulls, tc.want) {
				t.Fatalf("got %+v, %v, want %+v (%s)", p.Normalize.OptionalNulls, err, tc.want, tc.reason)
			}
		})
	}
}

// TestOptionalNullsInsideADecodedJSONString: the pass runs after RT-TOOL-8,
// so a null inside an array sent as a JSON string (decoded first) is
// dropped too, and the repairs say both, in order.
func TestOptionalNullsInsideADecodedJSONString(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithTool(planEventTool),
		gatewaytest.WithBackendHandler("plan_event", func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(req.GetArguments())}, nil
		}),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.Normalize.OptionalNulls = policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}
		}))
	res, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "plan_event", Arguments: gatewaytest.Args(t, map[string]any{
		"title": "Launch", "attendees": `[{"email": "a@example.com", "name": null}]`})})
	if err != nil {
		t.Fatalf("InvokeTool: %v", err)
	}
	var repairs []string
	for _, r := range res.GetRepairs() {
		repairs = append(repairs, r.GetKind().String()+":"+r.GetPath())
	}
	if want := []string{"REPAIR_KIND_JSON_DECODED:/attendees", "REPAIR_KIND_NULL_DROPPED:/attendees/0/name"}; !slices.Equal(repairs, want) {
		t.Errorf("repairs %v, want %v", repairs, want)
	}
	calls := env.Backend.CallsFor("plan_event")
	want := gatewaytest.Args(t, map[string]any{"title": "Launch", "attendees": []any{map[string]any{"email": "a@example.com"}}})
	if len(calls) != 1 || !proto.Equal(calls[0].Request.GetArguments(), want) {
		t.Errorf("backend received %v, want %v", calls, want)
	}
}

// TestOptionalNullsNamedInARefusal: a call refused for another reason after
// nulls were dropped tells the model (MCP text and _meta) which nulls the
// gateway removed before checking, so it can tell them from its mistake.
func TestOptionalNullsNamedInARefusal(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Normalize.OptionalNulls = policy.OptionalNullsConfig{Mode: policy.OptionalNullsDrop}
	}))
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(`{"title": "", "tags": null}`)})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "/tags (removed a null sent for an optional property, as if not given)") || !strings.Contains(text, "`title`") {
		t.Errorf("isError %v, text %q: want the minLength violation and the dropped /tags named", res.IsError, text)
	}
	var repairs []struct{ Path, Kind string }
	metaJSON(t, res.Meta[mcpapi.MCPMetaRepairs], &repairs)
	if len(repairs) != 1 || repairs[0].Path != "/tags" || repairs[0].Kind != "null-dropped" {
		t.Errorf("_meta repairs %+v, want null-dropped at /tags", repairs)
	}
}
