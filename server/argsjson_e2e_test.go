package server_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// tagRecordTool is the tool the recorded OpenAI call calls: a 64-bit id,
// a title and a tags array.
func tagRecordTool(backend string) registry.Tool {
	schema, err := structpb.NewStruct(map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"id", "title"},
		"properties": map[string]any{
			"id":    map[string]any{"type": "integer"},
			"title": map[string]any{"type": "string"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	})
	if err != nil {
		panic(err)
	}
	return registry.Tool{Name: "tag_record", Description: "Tag a record.", Backend: backend, InputSchema: schema}
}

// recordedOpenAIArguments is tool_calls[0].function.arguments of the
// recorded chat completion (its _source names where the shape comes from).
func recordedOpenAIArguments(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/modelcalls/openai_tag_record.json")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	fn := resp.Choices[0].Message.ToolCalls[0].Function
	if fn.Name != "tag_record" {
		t.Fatalf("recorded call is to %q", fn.Name)
	}
	return fn.Arguments
}

// TestArgumentsJSONFromAModelAPI: the arguments text as OpenAI returned it
// goes to the gateway as arguments_json. The 2^53+1 id is refused naming
// /id (a Struct built by the client would have rounded it to 2^53 and
// passed); with an exact id, the stringified tags are repaired. MCP, given
// the same text as tools/call arguments, answers the same in substance.
func TestArgumentsJSONFromAModelAPI(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(tagRecordTool),
		gatewaytest.WithBackendHandler("tag_record", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("tagged")}, nil
		}),
		gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Limits = policy.Limits{MaxObjectKeys: 5} }))
	recorded := recordedOpenAIArguments(t)
	exact := strings.Replace(recorded, "9007199254740993", "9007199254740992", 1)
	if exact == recorded {
		t.Fatal("the recorded arguments lost their id")
	}
	cs := mustConnect(t, testCtx(t), env.MCPURL, mcpClientOpts{})

	cases := []struct {
		name, reason string
		text         string
		alsoStruct   bool
		code         codes.Code
		field        string // the BadRequest field violation ("-": none expected)
		msg          string // a part of the gRPC message
		mcpMsg       string // a part of MCP's answer ("": gRPC only)
	}{
		{name: "recorded-inexact-id", reason: "2^53+1 is not a float64: refused before anything rounds it, naming /id",
			text: recorded, code: codes.InvalidArgument, field: "/id",
			msg: "the number at /id cannot be represented exactly as a 64-bit float; send it as a string", mcpMsg: "the number at /id cannot be represented exactly as a 64-bit float; send it as a string"},
		{name: "recorded-exact-id", reason: "the same call with an exact id: the stringified tags are repaired and it reaches the backend",
			text: exact, code: codes.OK, mcpMsg: "-"},
		{name: "bare-string", reason: "a model that answered with a string is told the shape it must send",
			text: `"tag the quarterly report"`, code: codes.InvalidArgument, field: "",
			msg: "arguments_json must be a JSON object; got a string", mcpMsg: "must be a JSON object; got a string"},
		{name: "truncated", reason: "a completion cut off at max_tokens: told where the text ends",
			text: exact[:40], code: codes.InvalidArgument, field: "/title",
			msg: "arguments_json ends after 40 bytes, inside the value at /title"}, // the MCP SDK's client refuses to send it
		{name: "duplicate-key", reason: "last-one-wins would forward a title the policy never saw",
			text: `{"id":1,"title":"a","title":"b"}`, code: codes.InvalidArgument, field: "/title",
			msg: "the key at /title appears more than once"},
		{name: "over-the-key-limit", reason: "the argument limits bound the parse itself",
			text: `{"id":1,"title":"a","tags":[],"a":1,"b":2,"c":3}`, code: codes.InvalidArgument, field: "-",
			msg: "max_object_keys limit of 5"},
		{name: "both-set", reason: "arguments and arguments_json are exclusive",
			text: exact, alsoStruct: true, code: codes.InvalidArgument, field: "-", msg: "both arguments and arguments_json"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			before := len(env.Backend.CallsFor("tag_record"))
			req := &gatewayv1.InvokeToolRequest{Tool: "tag_record", ArgumentsJson: tc.text, CallId: "call_Qx7hR2cL0tmZ3yV8w1aNf9Kd"}
			if tc.alsoStruct {
				req.Arguments = gatewaytest.Args(t, map[string]any{"id": 1, "title": "x"})
			}
			resp, err := env.Client.InvokeTool(testCtx(t), req)
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v (%s)", got, err, tc.code, tc.reason)
			}
			calls := env.Backend.CallsFor("tag_record")[before:]
			if tc.code != codes.OK {
				if len(calls) != 0 {
					t.Errorf("the backend was called (%s)", tc.reason)
				}
				st := status.Convert(err)
				if !strings.Contains(st.Message(), tc.msg) {
					t.Errorf("message %q lacks %q (%s)", st.Message(), tc.msg, tc.reason)
				}
				if tc.field != "-" {
					var fields []string
					for _, d := range st.Details() {
						if br, ok := d.(*errdetails.BadRequest); ok {
							for _, v := range br.GetFieldViolations() {
								fields = append(fields, v.GetField())
							}
						}
					}
					if diff := cmp.Diff([]string{tc.field}, fields); diff != "" {
						t.Errorf("field violations (-want +got):\n%s(%s)", diff, tc.reason)
					}
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("backend got %d calls, want 1 (%s)", len(calls), tc.reason)
			}
			got := calls[0].Request.GetArguments().AsMap()
			want := map[string]any{"id": float64(9007199254740992), "title": "Quarterly report", "tags": []any{"finance", "q3"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("backend arguments (-want +got):\n%s(%s)", diff, tc.reason)
			}
			if rs := resp.GetRepairs(); len(rs) != 1 || rs[0].GetPath() != "/tags" || rs[0].GetKind() != gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED {
				t.Errorf("repairs %v, want json-decoded /tags (%s)", rs, tc.reason)
			}
		})
		if tc.mcpMsg == "" {
			continue
		}
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			before := len(env.Backend.CallsFor("tag_record"))
			res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "tag_record", Arguments: json.RawMessage(tc.text)})
			calls := env.Backend.CallsFor("tag_record")[before:]
			if tc.code != codes.OK {
				if err == nil {
					t.Fatalf("MCP accepted it: %v (%s)", resultText(res), tc.reason)
				}
				if !strings.Contains(err.Error(), tc.mcpMsg) {
					t.Errorf("MCP error %q lacks %q (%s)", err, tc.mcpMsg, tc.reason)
				}
				if len(calls) != 0 {
					t.Errorf("the backend was called (%s)", tc.reason)
				}
				return
			}
			if err != nil || res.IsError {
				t.Fatalf("MCP call failed: %v %v (%s)", err, res, tc.reason)
			}
			rs, _ := res.Meta[mcpapi.MCPMetaRepairs].([]any)
			if len(rs) != 1 || rs[0].(map[string]any)["path"] != "/tags" {
				t.Errorf("MCP repairs %v, want /tags (%s)", rs, tc.reason)
			}
			if len(calls) != 1 || calls[0].Request.GetArguments().AsMap()["tags"] == nil {
				t.Errorf("backend calls %v (%s)", calls, tc.reason)
			}
		})
	}
}
