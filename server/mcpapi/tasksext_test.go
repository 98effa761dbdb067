package mcpapi

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTasksUsable(t *testing.T) {
	ext := func(v any) map[string]any {
		return map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{TasksExtension: v}}}
	}
	for _, tc := range []struct {
		reason string
		rev    string
		meta   map[string]any
		want   bool
	}{
		{"2025-11-25 has tasks of its own", "2025-11-25", nil, true},
		{"2025-06-18 has none, whatever it says", "2025-06-18", ext(map[string]any{}), false},
		{"2026-07-28 opting in", "2026-07-28", ext(map[string]any{}), true},
		{"2026-07-28 without client capabilities", "2026-07-28", nil, false},
		{"2026-07-28 with other extensions only", "2026-07-28", map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{"io.example/other": map[string]any{}}}}, false},
		{"2026-07-28 naming the extension with null is not opting in", "2026-07-28", ext(nil), false},
		{"the extension outside extensions is not opting in", "2026-07-28", map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{TasksExtension: map[string]any{}}}, false},
		{"a malformed capabilities value", "2026-07-28", map[string]any{mcp.MetaKeyClientCapabilities: "tasks"}, false},
	} {
		if got := tasksUsable(tc.rev, tc.meta); got != tc.want {
			t.Errorf("%s: tasksUsable(%q, %v) = %v; want %v", tc.reason, tc.rev, tc.meta, got, tc.want)
		}
	}
}

// A multi round-trip retry, which the fast path leaves to the SDK, is
// still a tools/call its round may answer with a task: recogniseRetry
// checks everything but the round's members as the fast path does, and
// decodes those as the SDK does.
func TestRecogniseRetry(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	answer := `"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}}`
	body := func(params string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"t",` + params + `}}`)
	}
	header := func(name string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {name}}
	}
	for _, tc := range []struct {
		reason string
		body   []byte
		name   string
		want   bool
	}{
		{"a retry: answers and the round's state", body(`"arguments":{},` + answer + `,"requestState":"s1"`), "t", true},
		{"state alone", body(`"arguments":{},"requestState":"s1"`), "t", true},
		{"no round's members: the fast path's own", body(`"arguments":{}`), "t", false},
		{"Mcp-Name not the tool: the SDK refuses it", body(`"arguments":{},"requestState":"s1"`), "u", false},
		{"answers that do not decode as the SDK's", body(`"arguments":{},"inputResponses":[1],"requestState":"s1"`), "t", false},
		{"a state that is not a string", body(`"arguments":{},"requestState":7`), "t", false},
	} {
		var w wireMessage
		if !sdkDecode(tc.body, &w) {
			t.Fatalf("%s: the body does not decode", tc.reason)
		}
		fc, ok := recogniseRetry(&fastPath{versions: mcp.SupportedProtocolVersions()}, header(tc.name), w)
		if ok != tc.want {
			t.Errorf("%s: recogniseRetry = %v; want %v", tc.reason, ok, tc.want)
			continue
		}
		if ok && (fc.req.Params.RequestState != "s1" || fc.req.Params.Name != "t" || !fc.newProtocol) {
			t.Errorf("%s: the call = %+v; want the tool t with its round's state", tc.reason, fc.req.Params)
		}
	}
}
