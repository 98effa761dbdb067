package mcpapi

import "testing"

// FuzzPeekToolCall: the unauthenticated request peek never panics on any
// (possibly truncated) body, and what it reads comes from the body.
func FuzzPeekToolCall(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"flowdrop/call_id":"c"}}}`,
		`{"method":"tools/list"}`, `{"params":{"name":"x"},"method":"tools/call"`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = body[:min(len(body), 512)]
		_, tool, callID := peekToolCall(body)
		if len(tool) > len(body) || len(callID) > len(body) {
			t.Fatalf("peek of %d bytes found a %d-byte tool name, %d-byte call id", len(body), len(tool), len(callID))
		}
	})
}
