package invokewire_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/normalize"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name.golden (rewritten under -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got); if the change is meant, go test -update:\n%s", path, d)
	}
}

// section is one golden row: its name, why it is there, and the bytes.
func section(out *strings.Builder, name, reason string, b []byte) {
	fmt.Fprintf(out, "## %s: %s\n%s\n", name, reason, hex.EncodeToString(b))
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGoldenEncoders pins each hand encoder's bytes for chosen messages and
// holds each row equal to proto.Marshal (deterministic): a change of
// layout shows in the golden file, a divergence from proto fails here.
func TestGoldenEncoders(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 200)
	args := mustStruct(t, map[string]any{"title": "Hi & bye", "tags": []any{"a", 1.5, true, nil}, "n": map[string]any{"k": long}})
	var out strings.Builder
	requests := []struct {
		name, reason, tool, callID string
		args                       *structpb.Struct
	}{
		{"request/plain", "tool, arguments and call id", "create_note", "call_1", args},
		{"request/no-call-id", "an empty call id is left out (proto3)", "create_note", "", args},
		{"request/empty-args", "empty arguments are still present (a message field)", "t", "c", &structpb.Struct{}},
		{"request/no-tool", "an empty tool is left out, the arguments' tag leads", "", "c", args},
	}
	for _, tc := range requests {
		ab := mustMarshal(t, tc.args)
		head := invokewire.BeginRequest(tc.tool, len(ab), tc.callID)
		msg, _ := invokewire.FinishRequest(append(head, ab...), len(head), tc.callID)
		if want := mustMarshal(t, &gatewayv1.InvokeRequest{Tool: tc.tool, Arguments: tc.args, CallId: tc.callID}); !bytes.Equal(msg, want) {
			t.Errorf("%s: not proto.Marshal's bytes (%s)", tc.name, tc.reason)
		}
		section(&out, tc.name, tc.reason, msg)
	}
	callers := []struct {
		name, reason string
		caller       *gatewayv1.Caller
	}{
		{"caller/api-key", "an API key caller with roles", &gatewayv1.Caller{Subject: "ci-bot", Method: "api-key", Roles: []string{"invoker", "admin"}}},
		{"caller/anonymous", "no roles", &gatewayv1.Caller{Subject: "anonymous", Method: "none"}},
		{"caller/method-only", "empty strings are left out (proto3)", &gatewayv1.Caller{Method: "jwt"}},
		{"caller/empty-role", "an empty role is still an element", &gatewayv1.Caller{Subject: "s", Roles: []string{"", "r"}}},
		{"caller/long", "lengths past one varint byte", &gatewayv1.Caller{Subject: long + long, Method: "mtls"}},
		{"caller/empty", "an empty caller is an empty field 4", &gatewayv1.Caller{}},
	}
	for _, tc := range callers {
		got, err := invokewire.CallerField(tc.caller.Subject, tc.caller.Method, tc.caller.Roles)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustMarshal(t, &gatewayv1.InvokeRequest{Caller: tc.caller}); !bytes.Equal(got, want) {
			t.Errorf("%s: not proto.Marshal's bytes (%s)", tc.name, tc.reason)
		}
		section(&out, tc.name, tc.reason, got)
	}
	responses := []struct {
		name, reason string
		result       *structpb.Value
		isError      bool
	}{
		{"response/object", "a result object, keys in deterministic order", structpb.NewStructValue(args), false},
		{"response/error", "a tool error: is_error after the result", structpb.NewStringValue("no such note"), true},
		{"response/empty", "no result, no error: zero bytes", nil, false},
		{"response/error-only", "is_error alone", nil, true},
		{"response/null", "a null result is present (a message field)", structpb.NewNullValue(), false},
	}
	for _, tc := range responses {
		got := invokewire.EncodeResponse(tc.result, tc.isError)
		if want := mustMarshal(t, &gatewayv1.InvokeResponse{Result: tc.result, IsError: tc.isError}); !bytes.Equal(got, want) {
			t.Errorf("%s: not proto.Marshal's bytes (%s)", tc.name, tc.reason)
		}
		section(&out, tc.name, tc.reason, got)
	}
	backend := invokewire.EncodeResponse(structpb.NewStringValue("ok & done"), true)
	toolResponses := []struct {
		name, reason string
		repairs      []normalize.Repair
		replayed     bool
	}{
		{"tool-response/as-is", "no repairs, not replayed: the backend's bytes", nil, false},
		{"tool-response/json", "a JSON repair has no passes", []normalize.Repair{{Path: "/tags", Kind: normalize.JSONDecoded}}, false},
		{"tool-response/entities", "entity repairs carry passes and the bound", []normalize.Repair{
			{Path: "/title", Kind: normalize.EntitiesDecoded, Passes: 2},
			{Path: "/body", Kind: normalize.EntitiesDecoded, Passes: 300, BoundHit: true}}, false},
		{"tool-response/root-null", "the root pointer is empty (left out); a dropped null", []normalize.Repair{{Kind: normalize.NullDropped}}, false},
		{"tool-response/replayed", "the replay mark alone", nil, true},
		{"tool-response/both", "repairs, then the mark", []normalize.Repair{{Path: "/a", Kind: normalize.JSONDecoded}}, true},
	}
	for _, tc := range toolResponses {
		got := invokewire.ToolResponse(backend, tc.repairs, tc.replayed)
		want := mustMarshal(t, &gatewayv1.InvokeToolResponse{Result: structpb.NewStringValue("ok & done"), IsError: true,
			Repairs: repairsProto(tc.repairs), Replayed: tc.replayed})
		if !bytes.Equal(got, want) {
			t.Errorf("%s: not proto.Marshal's bytes (%s)\n got % x\nwant % x", tc.name, tc.reason, got, want)
		}
		section(&out, tc.name, tc.reason, got)
	}
	streamResults := []struct {
		name, reason string
		resp         *gatewayv1.InvokeToolResponse
	}{
		{"stream-result/plain", "a tool response as the stream's result", &gatewayv1.InvokeToolResponse{Result: structpb.NewStringValue("ok & done"), IsError: true}},
		{"stream-result/empty", "an empty tool response is still present (a oneof message)", &gatewayv1.InvokeToolResponse{}},
		{"stream-result/long", "a length past one varint byte", &gatewayv1.InvokeToolResponse{Result: structpb.NewStringValue(long + long),
			Repairs: repairsProto([]normalize.Repair{{Path: "/a", Kind: normalize.JSONDecoded}}), Replayed: true}},
	}
	for _, tc := range streamResults {
		got := invokewire.StreamResult(mustMarshal(t, tc.resp))
		want := mustMarshal(t, &gatewayv1.InvokeToolStreamResponse{Event: &gatewayv1.InvokeToolStreamResponse_Result{Result: tc.resp}})
		if !bytes.Equal(got, want) {
			t.Errorf("%s: not proto.Marshal's bytes (%s)\n got % x\nwant % x", tc.name, tc.reason, got, want)
		}
		section(&out, tc.name, tc.reason, got)
	}
	golden(t, "encoders", out.String())
}

// TestGoldenDecoders pins what each hand decoder reads of chosen bytes,
// well formed and not, and holds it to proto.Unmarshal where that decodes.
func TestGoldenDecoders(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	req := func(m *gatewayv1.InvokeToolRequest) []byte { return mustMarshal(t, m) }
	scans := []struct {
		name, reason string
		b            []byte
	}{
		{"scan/plain", "tool, arguments, call id", req(&gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: mustStruct(t, map[string]any{"a": 1.0}), CallId: "c"})},
		{"scan/key", "an idempotency key: not a backend request's head", req(&gatewayv1.InvokeToolRequest{Tool: "t", Arguments: &structpb.Struct{}, IdempotencyKey: "k"})},
		{"scan/json", "arguments_json: refused, decoded whole", req(&gatewayv1.InvokeToolRequest{Tool: "t", ArgumentsJson: "{}"})},
		{"scan/bad-utf8", "an invalid UTF-8 tool: refused", []byte{0x0a, 0x02, 0xff, 0xfe}},
		{"scan/repeat", "a repeated tool: refused", []byte{0x0a, 0x01, 't', 0x0a, 0x01, 'u'}},
		{"scan/varint", "a varint field: refused", []byte{0x08, 0x01}},
		{"scan/empty", "no fields: no arguments", nil},
	}
	for _, tc := range scans {
		r, ok := invokewire.ScanToolRequest(tc.b)
		if ok {
			var m gatewayv1.InvokeToolRequest
			if err := proto.Unmarshal(tc.b, &m); err != nil || m.GetTool() != r.Tool || m.GetCallId() != r.CallID || m.GetIdempotencyKey() != r.IdempotencyKey {
				t.Errorf("%s: scan %+v disagrees with proto.Unmarshal %v, %v (%s)", tc.name, r, &m, err, tc.reason)
			}
		}
		fmt.Fprintf(&out, "## %s: %s\nok=%v tool=%q call_id=%q key=%q has_args=%v args=%x backend_head=%v\n",
			tc.name, tc.reason, ok, r.Tool, r.CallID, r.IdempotencyKey, r.HasArgs, r.Args, r.IsBackendHead())
	}
	resp := func(m *gatewayv1.InvokeResponse) []byte { return mustMarshal(t, m) }
	responses := []struct {
		name, reason string
		b            []byte
	}{
		{"response/plain", "result and is_error", resp(&gatewayv1.InvokeResponse{Result: structpb.NewNumberValue(2), IsError: true})},
		{"response/content", "content: not plain, the result still read", resp(&gatewayv1.InvokeResponse{Result: structpb.NewStringValue("x"),
			Content: []*gatewayv1.ContentBlock{{Block: &gatewayv1.ContentBlock_Text{Text: &gatewayv1.TextContent{Text: "x"}}}}})},
		{"response/unknown", "an unknown field 3: not plain, skipped", []byte{0x18, 0x01}},
		{"response/repeated-flag", "is_error twice: not plain; the last wins", []byte{0x10, 0x01, 0x10, 0x00}},
		{"response/truncated", "a result cut short: not plain, not read", []byte{0x0a, 0x05, 0x11}},
		{"response/empty", "zero bytes: plain, no result", nil},
	}
	for _, tc := range responses {
		plain := invokewire.IsPlainResponse(tc.b)
		v, isError, ok := invokewire.ResponseResult(tc.b)
		var m gatewayv1.InvokeResponse
		if err := proto.Unmarshal(tc.b, &m); (err == nil) != ok {
			t.Errorf("%s: ResponseResult ok %v, proto.Unmarshal %v (%s)", tc.name, ok, err, tc.reason)
		} else if ok && (!proto.Equal(m.GetResult(), v) || m.GetIsError() != isError) {
			t.Errorf("%s: read %v %v, proto.Unmarshal %v (%s)", tc.name, v, isError, &m, tc.reason)
		}
		vb, _ := proto.Marshal(v)
		fmt.Fprintf(&out, "## %s: %s\nplain=%v ok=%v is_error=%v result=%x\n", tc.name, tc.reason, plain, ok, isError, vb)
	}
	golden(t, "decoders", out.String())
}
