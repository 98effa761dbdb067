package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/rawcodec"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// limitInfo returns the ErrorInfo metadata of a limit refusal.
func limitInfo(err error) map[string]string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}

// stringifiedArray is the adversarial argument: n one-digit
// elements as a JSON string, ~2 bytes each.
func stringifiedArray(n int) string {
	return "[" + strings.Repeat("1,", n-1) + "1]"
}

// TestArgumentLimitsAreAlwaysOn: with no limits configured, the issue's
// 2 MB stringified array of 1,000,000 elements is refused with
// InvalidArgument naming the limit and the path, over gRPC and MCP — by the
// string length limit as sent, or, with that raised, by the element limit
// while the repair parses — and the gateway keeps serving.
func TestArgumentLimitsAreAlwaysOn(t *testing.T) {
	t.Parallel()
	huge := stringifiedArray(1_000_000)
	cases := []struct {
		name, reason string
		limits       policy.Limits
		limit, path  string
	}{
		{"defaults", "a 2 MB string is over the default max_string_length (1 MiB)",
			policy.Limits{}, policy.LimitMaxStringLength, "/tags"},
		{"repair-stops-at-the-element-limit", "with long strings allowed, JSON decoding stops at the 50,001st element",
			policy.Limits{MaxStringLength: 4 << 20}, policy.LimitMaxListElements, "/tags/50000"},
		{"repair-stops-at-a-configured-limit", "a policy's limits override the defaults",
			policy.Limits{MaxStringLength: 4 << 20, MaxListElements: 10}, policy.LimitMaxListElements, "/tags/10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Limits = tc.limits }))
			// Three parallel 2 MB calls on each face take ~7 s under -race on
			// two cores, and longer while other packages' tests run: more
			// than testCtx's 10 s allows them.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note",
				Arguments: gatewaytest.Args(t, map[string]any{"title": "t", "tags": huge})})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("gRPC: %v, want InvalidArgument (%s)", err, tc.reason)
			}
			if md := limitInfo(err); md["limit"] != tc.limit {
				t.Errorf("gRPC: ErrorInfo %v, want limit %q (%s)", md, tc.limit, tc.reason)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.limit) || !strings.Contains(msg, " at "+tc.path) {
				t.Errorf("gRPC: message %q does not name %s at %s (%s)", msg, tc.limit, tc.path, tc.reason)
			}

			cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
			raw, _ := json.Marshal(map[string]any{"title": "t", "tags": huge})
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(raw)})
			if err != nil {
				t.Fatalf("MCP: %v, want an isError result (%s)", err, tc.reason)
			}
			if text := resultText(res); !res.IsError || !strings.Contains(text, tc.limit) || !strings.Contains(text, " at "+tc.path) {
				t.Errorf("MCP: isError=%v %q, want the limit %s at %s (%s)", res.IsError, text, tc.limit, tc.path, tc.reason)
			}
			if _, ok := res.Meta[mcpapi.MCPMetaReason].(string); !ok {
				t.Errorf("MCP: no %s in %v", mcpapi.MCPMetaReason, res.Meta)
			}

			if n := len(env.Backend.CallsFor("create_note")); n != 0 {
				t.Errorf("backend got %d calls, want none", n)
			}
			// Still serving, on both faces.
			if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note",
				Arguments: gatewaytest.Args(t, map[string]any{"title": "t", "tags": `["a"]`})}); err != nil {
				t.Errorf("gRPC call after the refusal: %v", err)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(`{"title":"t"}`)}); err != nil || res.IsError {
				t.Errorf("MCP call after the refusal: %v %v", err, res)
			}
		})
	}
}

// Wire builders for crafted google.protobuf.Struct bytes.
func wireBytes(b []byte, num protowire.Number, payload []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), payload)
}

// wireEntry is one Struct.fields entry (field 1 of the Struct).
func wireEntry(key string, value []byte) []byte {
	return wireBytes(nil, 1, wireBytes(wireBytes(nil, 1, []byte(key)), 2, value))
}

func wireString(s string) []byte { return wireBytes(nil, 3, []byte(s)) }

func wireList(items ...[]byte) []byte {
	var l []byte
	for _, it := range items {
		l = wireBytes(l, 1, it)
	}
	return wireBytes(nil, 6, l)
}

// unknownField is a field no message of struct.proto has.
var unknownField = protowire.AppendString(protowire.AppendTag(nil, 9, protowire.BytesType), "smuggled")

// rawInvoke sends an InvokeToolRequest whose arguments are the given Struct
// bytes, exactly as given.
func rawInvoke(t *testing.T, env *gatewaytest.Env, tool, callID string, args []byte) error {
	t.Helper()
	var req []byte
	req = wireBytes(req, 1, []byte(tool))
	req = wireBytes(req, 2, args)
	req = wireBytes(req, 3, []byte(callID))
	return env.Conn.Invoke(testCtx(t), gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
		&rawcodec.Forward{Head: req}, new(rawcodec.Frame), rawcodec.CallOption())
}

// TestWireLimitsStopBeforeDecoding: a Struct of tiny list elements (4 bytes
// each on the wire, ~50–80 decoded) is refused from its bytes: the call is
// refused with the limit and the path, and the arguments are never decoded.
func TestWireLimitsStopBeforeDecoding(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool("anything")))
	null := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0)
	items := make([][]byte, 900_000) // ~3.6 MB
	for i := range items {
		items[i] = null
	}
	args := wireEntry("x", wireList(items...))
	var err error
	_, decoded, _ := pathDelta(env.Gateway, func() { err = rawInvoke(t, env, "anything", "tiny-elements", args) })
	if status.Code(err) != codes.InvalidArgument || limitInfo(err)["limit"] != policy.LimitMaxListElements ||
		!strings.Contains(status.Convert(err).Message(), " at /x/50000") {
		t.Fatalf("got %v (%v), want InvalidArgument naming max_list_elements at /x/50000", err, limitInfo(err))
	}
	if decoded != 0 {
		t.Errorf("arguments decoded %d times, want 0: the limit must stop the call before decoding", decoded)
	}
}

// hasUnknown reports whether m or any message below it holds unknown fields.
func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				found = found || hasUnknown(mv.Message())
				return !found
			})
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len() && !found; i++ {
				found = hasUnknown(v.List().Get(i).Message())
			}
		case fd.Message() != nil:
			found = hasUnknown(v.Message())
		}
		return !found
	})
	return found
}

// TestRawPathForwardsOnlyValidatedBytes: unknown fields anywhere in the
// arguments' Struct, Value or ListValue wire never reach the backend (the
// call is decoded, dropping them, and re-encoded), and a Value with no kind
// is refused naming its path. Fast paths off gives the same answers.
func TestRawPathForwardsOnlyValidatedBytes(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool("anything")),
		gatewaytest.WithBackendHandler("anything", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{}, nil
		}))
	title := wireEntry("title", wireString("t"))
	smuggled := []struct {
		name, reason string
		args         []byte
	}{
		{"in-the-struct", "a field beside Struct.fields", append(append([]byte{}, title...), unknownField...)},
		{"in-a-map-entry", "a third field in a fields entry",
			wireBytes(nil, 1, append(wireBytes(wireBytes(nil, 1, []byte("title")), 2, wireString("t")), unknownField...))},
		{"in-a-value", "a field beside the Value's kind", wireEntry("title", append(wireString("t"), unknownField...))},
		{"in-a-list", "a field beside ListValue.values",
			append(append([]byte{}, title...), wireEntry("tags", wireBytes(nil, 6, append(wireBytes(nil, 1, wireString("a")), unknownField...)))...)},
		{"two-kinds", "a Value with a string and then a number: proto keeps the last",
			append(append([]byte{}, title...), wireEntry("n", append(wireString("x"), protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0)...))...)},
	}
	for _, tool := range []string{"create_note", "anything"} {
		for _, tc := range smuggled {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				id := "smuggle-" + tool + "-" + tc.name
				err := rawInvoke(t, env, tool, id, tc.args)
				if tool == "create_note" && tc.name == "two-kinds" {
					// additionalProperties: false refuses "n" whatever it holds.
					if status.Code(err) != codes.InvalidArgument {
						t.Fatalf("got %v, want InvalidArgument", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("got %v, want the call forwarded without the extra fields (%s)", err, tc.reason)
				}
				got := backendCall(t, env, tool, id)
				if hasUnknown(got.GetArguments().ProtoReflect()) {
					t.Errorf("backend received unknown fields in %v (%s)", got.GetArguments(), tc.reason)
				}
				if got.GetArguments().GetFields()["title"].GetStringValue() != "t" {
					t.Errorf("backend got %v, want title t", got.GetArguments())
				}
			})
		}
	}

	kindless := []struct {
		name, reason, path string
		args               []byte
	}{
		{"empty-value", "a Value with no field at all", "/title", wireEntry("title", nil)},
		{"only-unknown", "a Value whose only field is unknown", "/title", wireEntry("title", unknownField)},
		{"entry-without-value", "a map entry with a key and no value", "/title", wireBytes(nil, 1, wireBytes(nil, 1, []byte("title")))},
		{"in-a-list", "a list element with no kind", "/tags/1",
			append(append([]byte{}, title...), wireEntry("tags", wireList(wireString("a"), nil))...)},
	}
	for _, tool := range []string{"create_note", "anything"} {
		for _, tc := range kindless {
			t.Run(tool+"/kindless/"+tc.name, func(t *testing.T) {
				id := "kindless-" + tool + "-" + tc.name
				err := rawInvoke(t, env, tool, id, tc.args)
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "at "+tc.path) {
					t.Fatalf("got %v, want InvalidArgument naming %s (%s)", err, tc.path, tc.reason)
				}
				for _, c := range env.Backend.CallsFor(tool) {
					if c.Request.GetCallId() == id {
						t.Errorf("a kind-less Value reached the backend (%s)", tc.reason)
					}
				}
			})
		}
	}
}
