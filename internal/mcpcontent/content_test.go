package mcpcontent

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

func wire(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestRoundTrip: every kind of block a tool result holds comes back from
// the contract as MCP's JSON wire had it.
func TestRoundTrip(t *testing.T) {
	size := int64(12)
	cases := []struct {
		name, reason string
		block        mcp.Content
	}{
		{"text", "the plain case", &mcp.TextContent{Text: "hi"}},
		{"text-annotated", "annotations and _meta ride along", &mcp.TextContent{Text: "hi",
			Annotations: &mcp.Annotations{Audience: []mcp.Role{"user", "assistant"}, Priority: 0.25, LastModified: "2026-01-02T03:04:05Z"},
			Meta:        mcp.Meta{"k": "v", "n": 1.5}}},
		{"text-empty", "an empty text is still a block", &mcp.TextContent{}},
		{"image", "bytes, not base64 text, in the contract", &mcp.ImageContent{Data: []byte{0, 1, 2, 255}, MIMEType: "image/png"}},
		{"audio", "as image", &mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav", Meta: mcp.Meta{"x": true}}},
		{"resource-link", "every field, size and icons included", &mcp.ResourceLink{URI: "file:///a", Name: "a", Title: "A", Description: "d",
			MIMEType: "text/plain", Size: &size, Icons: []mcp.Icon{{Source: "https://x/i.png", MIMEType: "image/png", Sizes: []string{"16x16"}, Theme: "dark"}}}},
		{"resource-link-bare", "size absent stays absent", &mcp.ResourceLink{URI: "file:///b", Name: "b"}},
		{"embedded-text", "text contents with their _meta", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "m://1", MIMEType: "text/plain", Text: "t", Meta: mcp.Meta{"a": "b"}}}},
		{"embedded-blob", "blob contents", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "m://2", Blob: []byte{9, 8}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := FromMCP([]mcp.Content{tc.block})
			if err != nil {
				t.Fatal(err)
			}
			back, err := ToMCP(blocks)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wire(t, []mcp.Content{tc.block}), wire(t, back)); diff != "" {
				t.Errorf("round trip differs (-sent +back) (%s):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	//lint:ignore SA1019 a sampling block is exactly what must be refused here
	if _, err := FromMCP([]mcp.Content{&mcp.ToolUseContent{Name: "x"}}); err == nil {
		t.Error("a sampling tool_use block was taken as a tool result's content")
	}
	if _, err := FromMCP([]mcp.Content{&mcp.EmbeddedResource{}}); err == nil {
		t.Error("an embedded resource without contents was taken")
	}
	if _, err := ToMCP([]*gatewayv1.ContentBlock{{}}); err == nil {
		t.Error("a block of no known kind was converted (it would be dropped from the answer)")
	}
}

func TestResultMetaDropsReservedKeys(t *testing.T) {
	s, err := ResultMeta(map[string]any{"flowdrop/repairs": []any{}, "io.modelcontextprotocol/serverInfo": map[string]any{}, "example.com/k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"example.com/k": "v"}, s.AsMap()); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	if s, _ := ResultMeta(map[string]any{"flowdrop/reason": "x"}); s != nil {
		t.Errorf("only reserved keys: %v, want nil", s)
	}
}
