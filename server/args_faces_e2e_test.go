package server_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestBadArgumentsTextIsOneRefusalOnBothFaces: the same arguments text
// sent as gRPC's arguments_json and as MCP's tools/call arguments is parsed
// by one parser (normalize.ParseArguments in the pipeline) and refused with
// the same reason, naming the same path, with an audit line on each face;
// the backend is never called. MCP answers malformed text with a JSON-RPC
// invalid-params error and a crossed limit with an isError result (the
// model can send less), as before the parser moved. Invalid UTF-8 is sent
// to MCP only: no InvokeToolRequest can hold it.
func TestBadArgumentsTextIsOneRefusalOnBothFaces(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Limits = policy.Limits{MaxObjectKeys: 4, MaxStringLength: 16, MaxDepth: 3, MaxListElements: 3}
		c.Policy.Audit = server.AuditConfig{Path: audit}
	}))
	cases := []struct {
		name, reason, args string
		wantReason         string // the refusal's reason (gRPC's ErrorInfo, MCP's flowdrop/reason) ("": served)
		wantPath           string // named in both faces' answers
		mcpLimit           bool   // MCP answers with an isError result, not a JSON-RPC error
		mcpOnly            bool   // text a proto string cannot carry: gRPC refuses the request itself
	}{
		{name: "duplicate-key", reason: "last-one-wins would forward a title the policy never saw",
			args: `{"title":"a","title":"b"}`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "key at /title"},
		{name: "duplicate-key-escaped", reason: "keys compare decoded",
			args: `{"title":"a","tags":[],"t\u0061gs":[]}`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "key at /tags"},
		{name: "inexact-number", reason: "a float64 cannot hold it: refused, never rounded",
			args: `{"title":"a","n":{"x":12345678901234567891}}`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "/n/x"},
		{name: "lone-surrogate", reason: `\ud800 alone is no character: decoding would invent U+FFFD`,
			args: `{"title":"a","tags":["\ud800"]}`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: `/tags/0 holds \ud800`},
		{name: "lone-surrogate-key", reason: "keys are text too",
			args: `{"title":"a","\udc00":1}`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "key at (root) holds"},
		{name: "invalid-utf8", reason: "a 0xff byte would become U+FFFD; over gRPC no request holds it (a proto string is UTF-8)",
			args: "{\"title\":\"a\",\"tags\":[\"\xff\"]}", wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "string at /tags/0 is not valid UTF-8", mcpOnly: true},
		{name: "not-an-object", reason: "a model that answered with a list is told the shape",
			args: `["a"]`, wantReason: string(pipeline.ReasonArgumentsInvalid), wantPath: "must be a JSON object; got an array"},
		{name: "over-the-key-limit", reason: "the limits bound the parse itself, at the key that crosses one",
			args: `{"title":"a","b":1,"c":2,"d":3,"e":4}`, wantReason: policy.ReasonLimitObjectKeys, wantPath: " at /e", mcpLimit: true},
		{name: "over-the-string-limit", reason: "a long string stops the parse at its path",
			args: `{"title":"` + strings.Repeat("x", 17) + `"}`, wantReason: policy.ReasonLimitStringLength, wantPath: " at /title", mcpLimit: true},
		{name: "over-the-depth-limit", reason: "nesting stops at the level that crosses the limit",
			args: `{"title":"a","n":{"m":{"o":{}}}}`, wantReason: policy.ReasonLimitDepth, wantPath: " at /n/m/o", mcpLimit: true},
		{name: "over-the-element-limit", reason: "elements are counted as parsed",
			args: `{"title":"a","tags":["a","b","c","d"]}`, wantReason: policy.ReasonLimitListElements, wantPath: " at /tags/3", mcpLimit: true},
		{name: "served", reason: "the control: good text is served on both faces", args: `{"title":"caf\u00e9"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			if tc.mcpOnly {
				return
			}
			before := len(env.Backend.CallsFor("create_note"))
			// Raw bytes: the text goes as sent (a lone surrogate escape is
			// valid UTF-8, so a proto string carries it).
			var req []byte
			req = protowire.AppendString(protowire.AppendTag(req, 1, protowire.BytesType), "create_note")
			req = protowire.AppendString(protowire.AppendTag(req, 3, protowire.BytesType), "c-"+tc.name+"-grpc")
			req = protowire.AppendString(protowire.AppendTag(req, 5, protowire.BytesType), tc.args)
			var resp []byte
			err := env.Conn.Invoke(testCtx(t), "/flowdrop.gateway.v1.ToolGatewayService/InvokeTool", &req, &resp, grpc.ForceCodec(rawBytesCodec{}))
			calls := len(env.Backend.CallsFor("create_note")) - before
			if tc.wantReason == "" {
				if err != nil || calls != 1 {
					t.Fatalf("%v, %d backend calls: want served (%s)", err, calls, tc.reason)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.wantPath) || calls != 0 {
				t.Errorf("%v, %d backend calls: want InvalidArgument naming %q, no call (%s)", err, calls, tc.wantPath, tc.reason)
			}
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok && !strings.EqualFold(strings.ReplaceAll(info.GetReason(), "_", "-"), tc.wantReason) {
					t.Errorf("ErrorInfo reason %q, want %q (%s)", info.GetReason(), tc.wantReason, tc.reason)
				}
			}
		})
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","_meta":{"flowdrop/call_id":"c-` +
				tc.name + `-mcp"},"arguments":` + tc.args + `}}`
			code, raw, r := mcpPost(t, env.MCPURL, nil, []byte(body))
			if code != http.StatusOK || r == nil {
				t.Fatalf("HTTP %d %q, want a JSON-RPC reply (%s)", code, raw, tc.reason)
			}
			calls := len(env.Backend.CallsFor("create_note")) - before
			switch {
			case tc.wantReason == "":
				if r.Error != nil || r.Result == nil || r.Result.IsError || calls != 1 {
					t.Fatalf("reply %s, %d backend calls: want served (%s)", raw, calls, tc.reason)
				}
				return
			case tc.mcpLimit:
				if r.Result == nil || !r.Result.IsError || !strings.Contains(raw, tc.wantPath) || !strings.Contains(raw, `"flowdrop/reason":"`+tc.wantReason+`"`) {
					t.Errorf("reply %s: want an isError result with reason %s naming %q (%s)", raw, tc.wantReason, tc.wantPath, tc.reason)
				}
			default:
				if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(r.Error.Message, tc.wantPath) {
					t.Errorf("reply %s: want invalid params (%d) naming %q (%s)", raw, jsonrpc.CodeInvalidParams, tc.wantPath, tc.reason)
				}
			}
			if calls != 0 {
				t.Errorf("the backend was called %d times (%s)", calls, tc.reason)
			}
		})
	}

	lines, raw := auditLines(t, env, audit) // closes the gateway: every line is written
	byID := map[string]map[string]any{}
	for _, l := range lines {
		if id, ok := l["call_id"].(string); ok {
			byID[id] = l
		}
	}
	for _, tc := range cases {
		grpcLine, mcpLine := byID["c-"+tc.name+"-grpc"], byID["c-"+tc.name+"-mcp"]
		if tc.mcpOnly {
			grpcLine = mcpLine
		}
		if grpcLine == nil || mcpLine == nil {
			t.Errorf("%s: audit lines gRPC %v, MCP %v: want one on each face (%s)\n%s", tc.name, grpcLine, mcpLine, tc.reason, raw)
			continue
		}
		// The audit line's reason: a policy refusal's own, "validation-failed"
		// for arguments refused as invalid (the pipeline's audit outcome).
		wantDecision, wantAudit := "allow", tc.wantReason
		if tc.wantReason == string(pipeline.ReasonArgumentsInvalid) {
			wantAudit = "validation-failed"
		}
		if tc.wantReason != "" {
			wantDecision = grpcLine["decision"].(string)
			if wantDecision == "allow" {
				t.Errorf("%s: gRPC audit decision allow for a refused call (%s)", tc.name, tc.reason)
			}
		}
		for face, l := range map[string]map[string]any{"gRPC": grpcLine, "MCP": mcpLine} {
			gotReason, _ := l["reason"].(string)
			if gotReason != wantAudit || l["decision"] != wantDecision || l["tool"] != "create_note" {
				t.Errorf("%s: %s audit line %v: want decision %s, reason %q (%s)", tc.name, face, l, wantDecision, wantAudit, tc.reason)
			}
		}
	}
}
