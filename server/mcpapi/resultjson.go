package mcpapi

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appendCallResult appends r's JSON as encodeResult writes it, without
// reflection, for the shape nearly every tools/call answer has: no _meta,
// text blocks without _meta or annotations, structured content as raw
// JSON. encodeResult's encoder would visit each block through the SDK's
// TextContent.MarshalJSON (a json.Marshal of its own, then a compaction of
// that output); here the text is encoded once, with the same escapes (the
// SDK's Marshal escapes HTML; the outer encoder leaves it so). False, with
// b as it was, for any other shape: the caller encodes it the general way.
// TestAppendCallResultMatchesEncoder holds the two byte-equal.
func appendCallResult(b *bytes.Buffer, r *callResult) bool {
	if r == nil || len(r.Meta) > 0 || r.Content == nil || len(r.InputRequests) > 0 || r.RequestState != "" ||
		!plainJSONString(r.ResultType) {
		return false
	}
	n := b.Len()
	text := json.NewEncoder(b) // HTML escaped, as the SDK's json.Marshal of a block
	b.WriteString(`{"content":[`)
	for i, c := range r.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || len(t.Meta) > 0 || t.Annotations != nil {
			b.Truncate(n)
			return false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":`)
		if text.Encode(t.Text) != nil {
			b.Truncate(n)
			return false
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte('}')
	}
	b.WriteByte(']')
	switch sc := r.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if len(sc) == 0 { // the encoder writes null for it: not this shape
			b.Truncate(n)
			return false
		}
		b.WriteString(`,"structuredContent":`)
		if json.Compact(b, sc) != nil { // the encoder's compaction of raw JSON (HTML left)
			b.Truncate(n)
			return false
		}
	default:
		b.Truncate(n)
		return false
	}
	if r.IsError {
		b.WriteString(`,"isError":true`)
	}
	if r.ResultType != "" {
		b.WriteString(`,"resultType":"`)
		b.WriteString(r.ResultType)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return true
}
