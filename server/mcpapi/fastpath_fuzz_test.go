package mcpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzRecogniseToolsCall: the fast path's recogniser never panics, and
// whatever it takes is what the SDK would take for the same tools/call:
// readBody accepts the body, the SDK's own JSON-RPC decoder reads it as a
// call (not a batch, not a notification) of tools/call with the same id,
// and the revision headers agree with the _meta triple as the SDK requires.
// Params it decodes are what the SDK's decoding gives. Its JSON validity
// check is readBody's, exactly, and JSON whose numbers
// plainNumbers passes decodes into a Go value as the SDK decodes it.
func FuzzRecogniseToolsCall(f *testing.F) {
	newMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []struct{ body, version, name string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`, "", ""},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","arguments":{},` + newMeta + `}}`, "2026-07-28", "t"},
		{`{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"t"}}`, "2025-06-18", ""},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"n":[1e400,-0.5,"1e9",true]},` + newMeta + `}}`, "2026-07-28", "t"},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}]`, "", ""},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}`, "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"t","name":"u","_meta":{"flowdrop/call_id":"c"}}} `, "2025-11-25", ""},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`, "", ""},
		{`{"name":"t","_meta":{"a":{"b":[1,{"c":null}]},"a":2},"arguments":{"x":1}}`, "", ""},
		{`{"name":"t","_meta":7}`, "", ""},
		{`{"name":"t","_meta":null,"requestState":""}`, "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}{}`, "", ""},
	} {
		f.Add([]byte(s.body), s.version, s.name)
	}
	fp, _ := newFastPath(false)
	f.Fuzz(func(t *testing.T, body []byte, version, name string) {
		body = body[:min(len(body), 4096)]
		if valid, one := json.Valid(body), oneJSONValue(body) == nil; valid != one {
			t.Fatalf("json.Valid = %v but readBody's check = %v for %q", valid, one, body)
		}
		if json.Valid(body) && plainNumbers(body) && utf8.Valid(body) {
			var v any
			if !sdkDecode(body, &v) {
				t.Fatalf("plainNumbers passed JSON the SDK cannot decode into a Go value: %q", body)
			}
		}
		if p, ok := decodeCallParams(body); ok {
			var sdk *mcp.CallToolParamsRaw
			if !sdkDecode(body, &sdk) || !reflect.DeepEqual(p, sdk) {
				t.Fatalf("params decoded as %#v, the SDK's decoding gives %#v: %q", p, sdk, body)
			}
		}
		h := http.Header{}
		if version != "" {
			h.Set(protocolVersionHeader, version)
		}
		if name != "" {
			h.Set(nameHeader, name)
		}
		h.Set(methodHeader, "tools/call")
		fc, ok := fp.recogniseBody(h, body)
		if !ok {
			return
		}
		if oneJSONValue(body) != nil {
			t.Fatalf("took a body readBody refuses: %q", body)
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("took a body the SDK cannot decode (%v): %q", err, body)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || !req.IsCall() || req.Method != "tools/call" {
			t.Fatalf("took %#v as a tools/call: %q", msg, body)
		}
		if !reflect.DeepEqual(req.ID, fc.id) {
			t.Fatalf("id %v, the SDK's %v: %q", fc.id.Raw(), req.ID.Raw(), body)
		}
		if fc.req.Params == nil || len(req.Params) == 0 {
			t.Fatalf("took a call without params: %q", body)
		}
		if version != "" && !slices.Contains(mcp.SupportedProtocolVersions(), version) {
			t.Fatalf("took revision header %q the SDK does not serve", version)
		}
		metaVersion, _ := fc.req.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
		if (version >= RevisionResultType || metaVersion != "") && version != metaVersion {
			t.Fatalf("header revision %q, _meta %q: the SDK refuses that", version, metaVersion)
		}
		if fc.newProtocol && (name == "" || name != fc.req.Params.Name) {
			t.Fatalf("Mcp-Name %q for tool %q: the SDK refuses that", name, fc.req.Params.Name)
		}
		if want := metaVersion; want == "" {
			if want = version; want == "" {
				want = defaultRevision
			}
			if fc.rev != want {
				t.Fatalf("revision %q, want %q", fc.rev, want)
			}
		}
	})
}
