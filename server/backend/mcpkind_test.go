package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// mcpCall is a call of the upstream tool named tool at url with args.
func mcpCall(t *testing.T, url, tool string, args map[string]any) *pipeline.Call {
	t.Helper()
	e, err := registry.Compile(registry.Tool{Name: "mcp.t", Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: tool}},
		InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := structpb.NewStruct(args)
	if err != nil {
		t.Fatal(err)
	}
	c := pipeline.NewCall(e.Tool.Name, "call-1", a)
	c.Entry = e
	return c
}

// TestMCPUpstreamInvoke: the MCP kind against a real go-sdk server on
// loopback: the arguments arrive as sent, the structured answer and a tool
// error come back whole as an InvokeResponse, and an upstream that is gone
// is Unavailable naming the tool, not its URL.
func TestMCPUpstreamInvoke(t *testing.T) {
	up := mcpupstreamtest.Start(t)
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: 5 * time.Second, MaxRecvMsgSize: 1 << 20, MaxSendMsgSize: 1 << 20})
	t.Cleanup(ts.Close)
	m := NewMCPUpstream(ts)
	t.Cleanup(m.Close)

	res, err := m.Invoke(context.Background(), mcpCall(t, up.URL, "add_items", map[string]any{"items": []any{map[string]any{"title": "a"}, map[string]any{"title": "b"}}}))
	if err != nil {
		t.Fatalf("Invoke add_items: %v", err)
	}
	var out gatewayv1.InvokeResponse
	if err := proto.Unmarshal(res.Encoded, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.GetResult().GetStructValue().GetFields()["count"].GetNumberValue(); got != 2 || out.GetIsError() {
		t.Errorf("add_items answered %v (is_error %v), want the upstream's structured count 2", out.GetResult(), out.GetIsError())
	}
	if args := up.Args(); len(args) != 1 || !strings.Contains(string(args[0]), `"title":"b"`) {
		t.Errorf("upstream received %s, want the call's arguments", args)
	}

	res, err = m.Invoke(context.Background(), mcpCall(t, up.URL, "refuse", nil))
	if err != nil {
		t.Fatalf("Invoke refuse: %v", err)
	}
	out.Reset()
	if err := proto.Unmarshal(res.Encoded, &out); err != nil {
		t.Fatal(err)
	}
	if !out.GetIsError() || len(out.GetContent()) != 1 {
		t.Errorf("refuse answered %v, want a tool error with the upstream's content block", &out)
	}
	// The message the answer was encoded from travels with it (the MCP face
	// reads it), and is exactly the bytes decoded.
	if kept, ok := res.Decoded.(*gatewayv1.InvokeResponse); !ok || !proto.Equal(kept, &out) {
		t.Errorf("the kept message %v, want the encoded answer %v", res.Decoded, &out)
	}

	url := up.URL
	up.Close()
	_, err = NewMCPUpstream(ts).Invoke(context.Background(), mcpCall(t, url, "add_items", nil))
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Code != pipeline.Unavailable || !strings.Contains(pe.Message, "mcp.t") || strings.Contains(pe.Message, url) {
		t.Errorf("an upstream that is gone: %v, want Unavailable naming the tool, not %s", err, url)
	}
}

// TestMCPUpstreamArgumentsOnTheWire: a real go-sdk upstream receives a
// call's arguments as protojson wrote them (compacted: same keys, order,
// and escapes — the encoder is policy.AppendStructJSON now; its numbers
// are held to protojson in policy), and
// arguments JSON cannot carry are refused before anything is sent.
func TestMCPUpstreamArgumentsOnTheWire(t *testing.T) {
	up := mcpupstreamtest.Start(t)
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: 5 * time.Second, MaxRecvMsgSize: 1 << 20, MaxSendMsgSize: 1 << 20})
	t.Cleanup(ts.Close)
	m := NewMCPUpstream(ts)
	t.Cleanup(m.Close)

	c := mcpCall(t, up.URL, "add_items", map[string]any{"items": []any{
		map[string]any{"title": "<b>&amp;</b> \u2028\u2029 \"q\" \\ \n\t\x01 日本語 𝄞"},
		map[string]any{"title": "ünïcödé \x7f"},
	}})
	if _, err := m.Invoke(context.Background(), c); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	args, err := c.Args()
	if err != nil {
		t.Fatal(err)
	}
	pj, err := protojson.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := json.Compact(&want, pj); err != nil {
		t.Fatal(err)
	}
	received := up.Args()
	if len(received) != 1 {
		t.Fatalf("upstream received %d calls, want 1", len(received))
	}
	if err := json.Compact(&got, received[0]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("upstream received\n %s\nwant (protojson, compacted)\n %s", got.Bytes(), want.Bytes())
	}

	nan := mcpCall(t, up.URL, "add_items", nil)
	nan.Init(nan.Tool, "call-2", &structpb.Struct{Fields: map[string]*structpb.Value{"items": structpb.NewNumberValue(math.NaN())}})
	if _, err := m.Invoke(context.Background(), nan); err == nil || !strings.Contains(err.Error(), "encoding the arguments") {
		t.Errorf("NaN arguments: %v, want the encoding refused", err)
	}
	if n := len(up.Args()); n != 1 {
		t.Errorf("upstream received %d calls after the refused one, want still 1", n)
	}
}
