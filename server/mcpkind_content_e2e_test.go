package server_test

// An upstream MCP server's answer reaches both faces whole (issue 27 item
// 3): text, image, audio, resource_link, embedded resources (text and
// blob), annotations, structuredContent, _meta and isError, as sent —
// except _meta keys that are not an upstream's to set. The size cap
// applies to the whole answer. A real go-sdk upstream and the go-sdk's own
// client over 127.0.0.1; gRPC InvokeTool over loopback.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpcontent"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// richAnswer is what the upstream's "rich" tool answers: every content
// kind a tool result can hold, with annotations and _meta, and result
// _meta that includes keys only the gateway or the protocol may set.
func richAnswer(isError bool, image []byte) *mcp.CallToolResult {
	size := int64(4096)
	return &mcp.CallToolResult{
		IsError: isError,
		Content: []mcp.Content{
			&mcp.TextContent{Text: "three things", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
			&mcp.ImageContent{Data: image, MIMEType: "image/png", Meta: mcp.Meta{"origin": "camera"}},
			&mcp.AudioContent{Data: []byte("RIFF\x00\x01wav"), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///reports/q3.pdf", Name: "q3", Title: "Q3 report", Description: "the quarter",
				MIMEType: "application/pdf", Size: &size, Icons: []mcp.Icon{{Source: "https://example.com/pdf.png", MIMEType: "image/png", Sizes: []string{"16x16"}}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "memo://1", MIMEType: "text/plain", Text: "the memo", Meta: mcp.Meta{"v": 2.0}},
				Annotations: &mcp.Annotations{LastModified: "2026-12-01T00:00:00Z"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "blob://1", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 0xff}}},
		},
		StructuredContent: map[string]any{"count": 3.0, "names": []any{"a", "b"}},
		Meta: mcp.Meta{
			"example.com/trace":                  "t-1",
			"flowdrop/repairs":                   []any{map[string]any{"path": "/spoofed", "kind": "json-decoded"}},
			"flowdrop/reason":                    "spoofed",
			"io.modelcontextprotocol/serverInfo": map[string]any{"name": "not-the-gateway", "version": "0"},
		},
	}
}

// contentJSON is content as MCP's JSON wire has it.
func contentJSON(t *testing.T, content []mcp.Content) string {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(raw, &v)
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

func TestMCPUpstreamContentPassesWhole(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := mcpupstreamtest.Start(t)
	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 16)
	bigImage := bytes.Repeat([]byte{7}, 200<<10)
	up.MCP.AddTool(&mcp.Tool{Name: "rich", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return richAnswer(false, image), nil
		})
	up.MCP.AddTool(&mcp.Tool{Name: "rich_error", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return richAnswer(true, image), nil
		})
	up.MCP.AddTool(&mcp.Tool{Name: "rich_big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return richAnswer(false, bigImage), nil
		})
	credFile := filepath.Join(t.TempDir(), "upstream.header")
	if err := os.WriteFile(credFile, []byte(mcpupstreamtest.CredentialHeader+": tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := internalsPolicy()
	p.Authz.Default = policy.ToolAccess{Allow: []string{"up.*"}}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP(), declareCredential("", credFile, up.URL))
	importUpstream(t, ctx, env, up.URL, credFile, "up.")

	// rich_big gets a 64 KiB cap: its 200 KiB image is over it.
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	got, err := rc.GetTool(withKeyCtx(ctx, keyOps), &gatewayv1.GetToolRequest{Name: "up.rich_big"})
	if err != nil {
		t.Fatal(err)
	}
	capped := got.GetTool()
	capped.MaxResultBytes = 64 << 10
	if _, err := rc.RegisterTool(withKeyCtx(ctx, keyOps), &gatewayv1.RegisterToolRequest{Tool: capped}); err != nil {
		t.Fatal(err)
	}

	wantMeta := map[string]any{"example.com/trace": "t-1"}
	// 2026-07-28 first: its first call makes the gateway's session to the
	// upstream, which serves older revisions only. The caller's revision
	// must not become the gateway's offer to the upstream (the SDK keeps it
	// in the request's context; mcpapi/sdkcontext.go).
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}, version: rev})
		for _, tc := range []struct {
			tool    string
			isError bool
			reason  string
		}{
			{"up.rich", false, "every content kind, as sent"},
			{"up.rich_error", true, "a tool error keeps its content too"},
		} {
			t.Run(rev+"/mcp/"+tc.tool, func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				want := richAnswer(tc.isError, image)
				if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, res.Content)); diff != "" {
					t.Errorf("content differs from the upstream's (-upstream +received) (%s):\n%s", tc.reason, diff)
				}
				if res.IsError != tc.isError {
					t.Errorf("isError = %v, want %v", res.IsError, tc.isError)
				}
				if diff := cmp.Diff(want.StructuredContent, res.StructuredContent); diff != "" {
					t.Errorf("structuredContent (-upstream +received):\n%s", diff)
				}
				if res.Meta["example.com/trace"] != "t-1" {
					t.Errorf("_meta %v lacks the upstream's own key", res.Meta)
				}
				for _, k := range []string{"flowdrop/repairs", "flowdrop/reason"} {
					if v, ok := res.Meta[k]; ok {
						t.Errorf("_meta[%q] = %v: the upstream spoke for the gateway", k, v)
					}
				}
				if si, ok := res.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any); ok && si["name"] != "flowdrop-gateway" {
					t.Errorf("serverInfo %v: the upstream spoke for the gateway's hop", si)
				}
			})
		}
		t.Run(rev+"/mcp/over-the-cap", func(t *testing.T) {
			// reason: the cap is on the whole answer: a 200 KiB image with a
			// few bytes of text is refused naming the tool and the limit, not
			// cut down to its text.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.rich_big", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(res)
			if !res.IsError || !strings.Contains(text, `"up.rich_big"`) || !strings.Contains(text, "65536") || len(res.Content) != 1 {
				t.Errorf("result %+v (%q), want one isError text naming the tool and 65536", res, text)
			}
		})
	}

	t.Run("grpc", func(t *testing.T) {
		// reason: the gRPC face carries the same answer in the contract's
		// ContentBlocks; converted back they are the upstream's content.
		resp, err := env.Client.InvokeTool(withKeyCtx(ctx, keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "up.rich"})
		if err != nil {
			t.Fatal(err)
		}
		content, err := mcpcontent.ToMCP(resp.GetContent())
		if err != nil {
			t.Fatal(err)
		}
		want := richAnswer(false, image)
		if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, content)); diff != "" {
			t.Errorf("content (-upstream +InvokeToolResponse):\n%s", diff)
		}
		if img := resp.GetContent()[1].GetImage(); !bytes.Equal(img.GetData(), image) || img.GetMimeType() != "image/png" {
			t.Errorf("image block %v: want the raw bytes, not base64 text", img)
		}
		if diff := cmp.Diff(wantMeta, resp.GetMeta().AsMap()); diff != "" {
			t.Errorf("meta (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want.StructuredContent, resp.GetResult().AsInterface()); diff != "" {
			t.Errorf("result is not the structured content (-want +got):\n%s", diff)
		}
		big, err := env.Client.InvokeTool(withKeyCtx(ctx, keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "up.rich_big"})
		if err != nil {
			t.Fatal(err)
		}
		if !big.GetIsError() || len(big.GetContent()) != 0 || !strings.Contains(big.GetResult().GetStringValue(), "65536") {
			t.Errorf("over the cap: %v, want a tool error naming the limit and no content", big)
		}
	})
}

// TestBackendContentPassesWhole: a ToolBackendService backend may answer in
// MCP's content model too (InvokeResponse.content and meta): both faces get
// its blocks, and its _meta less the keys that are not a backend's to set.
func TestBackendContentPassesWhole(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	image := []byte{0x89, 'P', 'N', 'G'}
	want := richAnswer(false, image)
	blocks, err := mcpcontent.FromMCP(want.Content)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := structpb.NewStruct(map[string]any{"example.com/trace": "t-1", "flowdrop/reason": "spoofed",
		"io.modelcontextprotocol/serverInfo": map[string]any{"name": "not-the-gateway"}})
	var runs atomic.Int64
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithBackendHandler("create_note",
		func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			runs.Add(1)
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("three things"), Content: blocks, Meta: meta}, nil
		}))

	resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := mcpcontent.ToMCP(resp.GetContent())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, got)); diff != "" {
		t.Errorf("gRPC content (-backend +caller):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"example.com/trace": "t-1"}, resp.GetMeta().AsMap()); diff != "" {
		t.Errorf("gRPC meta (-want +got): reserved keys must not pass\n%s", diff)
	}

	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, res.Content)); diff != "" {
		t.Errorf("MCP content (-backend +caller):\n%s", diff)
	}
	if res.Meta["example.com/trace"] != "t-1" || res.Meta["flowdrop/reason"] != nil {
		t.Errorf("MCP _meta %v: want the backend's own key and not its spoofed flowdrop/reason", res.Meta)
	}

	// A replay under an idempotency key is the same whole answer: the
	// stored result carries the blocks and _meta.
	for i := range 2 {
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", IdempotencyKey: "rich-1",
			Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := mcpcontent.ToMCP(resp.GetContent())
		if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, got)); diff != "" || resp.GetReplayed() != (i == 1) {
			t.Errorf("keyed call %d: replayed %v, content (-backend +caller):\n%s", i, resp.GetReplayed(), diff)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "x"},
			Meta: mcp.Meta{mcpapi.MCPMetaIdempotencyKey: "rich-2"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(contentJSON(t, want.Content), contentJSON(t, res.Content)); diff != "" || (res.Meta[mcpapi.MCPMetaReplayed] == true) != (i == 1) {
			t.Errorf("keyed MCP call %d: _meta %v, content (-backend +caller):\n%s", i, res.Meta, diff)
		}
	}
	if n := runs.Load(); n != 4 {
		t.Errorf("the backend ran %d times, want 4 (2 unkeyed, each key once)", n)
	}
}
