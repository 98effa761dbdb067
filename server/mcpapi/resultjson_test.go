package mcpapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// TestAppendCallResultMatchesEncoder: appendCallResult writes what
// encodeResult writes, byte for byte — escapes (HTML, U+2028, control
// characters, invalid UTF-8), raw structured content compacted, isError
// and resultType — or declines a shape it does not write and leaves the
// buffer as it was.
func TestAppendCallResultMatchesEncoder(t *testing.T) {
	check := func(t interface {
		Fatalf(string, ...any)
	}, r *callResult, wantWritten bool, reason string) {
		var b bytes.Buffer
		b.WriteString("x")
		written := appendCallResult(&b, r)
		if written != wantWritten {
			t.Fatalf("appendCallResult = %v, want %v (%s)", written, wantWritten, reason)
		}
		if !written {
			if b.String() != "x" {
				t.Fatalf("declined but left %q (%s)", b.String(), reason)
			}
			return
		}
		want, err := encodeResult(r)
		if err != nil {
			t.Fatalf("encodeResult: %v", err)
		}
		if got := b.String()[1:]; got != string(want) {
			t.Fatalf("wrote\n%s\nthe encoder writes\n%s\n(%s)", got, want, reason)
		}
	}
	text := func(s string) mcp.Content { return &mcp.TextContent{Text: s} }
	for _, tc := range []struct {
		name    string
		r       *callResult
		written bool
		reason  string
	}{
		{"echo", &callResult{Content: []mcp.Content{text(`{"a":"<b>&"}`)}}, true, "the echo's answer on 2025-06-18"},
		{"empty", &callResult{Content: []mcp.Content{}, ResultType: "complete"}, true, "no blocks; 2026-07-28's resultType"},
		{"structured", &callResult{Content: []mcp.Content{text("1"), text("")}, StructuredContent: json.RawMessage(" {\"k\" : [1, \"<\"] } "), IsError: true}, true,
			"raw structured content compacted, HTML left; an empty text"},
		{"meta", &callResult{Content: []mcp.Content{text("a")}, ResultBase: mcp.ResultBase{Meta: mcp.Meta{"k": "v"}}}, false, "_meta: the encoder's"},
		{"block meta", &callResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": 1}}}}, false, "a block's _meta"},
		{"annotations", &callResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}, false, "annotations"},
		{"image", &callResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, false, "another kind of block"},
		{"nil content", &callResult{}, false, "content null"},
		{"any structured", &callResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"a": 1}}, false, "structured content not raw"},
		{"empty raw", &callResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(nil)}, false, "raw but empty"},
		{"invalid raw", &callResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{`)}, false, "raw that is no JSON: the encoder's error"},
		{"input", &callResult{Content: []mcp.Content{}, InputRequests: json.RawMessage(`{}`), RequestState: "s"}, false, "an input round"},
		{"nil", nil, false, "no result"},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.r, tc.written, tc.reason) })
	}
	runes := []rune("aZ0 \"\\/<>&'\u2028\u2029\u00e9\U0001F600\x00\x01\x1f\x7f\t\n\r\b\f\ufffd")
	rapid.Check(t, func(rt *rapid.T) {
		r := &callResult{Content: []mcp.Content{}, IsError: rapid.Bool().Draw(rt, "isError"),
			ResultType: rapid.SampledFrom([]string{"", "complete", "input_required"}).Draw(rt, "resultType")}
		for range rapid.IntRange(0, 3).Draw(rt, "blocks") {
			s := string(rapid.SliceOf(rapid.SampledFrom(runes)).Draw(rt, "text"))
			if rapid.Bool().Draw(rt, "invalid") {
				s += "\xff\xc3" // invalid UTF-8: the encoder writes U+FFFD
			}
			r.Content = append(r.Content, text(s))
		}
		if rapid.Bool().Draw(rt, "structured") {
			r.StructuredContent = json.RawMessage(`{"s":"<&>\u2028","n":[1,-2.5e3,true,null], "o" : {}}`)
		}
		check(rt, r, true, "generated")
	})
}
