package server_test

// What the MCP face writes itself follows the protocol revision the client
// negotiated (issue 27 item 1), and the face serves only what it declares
// (item 4). Raw JSON-RPC over real HTTP on 127.0.0.1, so the test sees the
// bytes a client parses: the go-sdk's own client does not check resultType,
// and the npm SDKs that do run in internal/mcpclienttest.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// mcpRevisionRequest is a JSON-RPC request under revision rev: from
// 2026-07-28 the revision (and the client's capabilities) travel in each
// request's _meta; before it, in the MCP-Protocol-Version header of a
// session that said initialize.
func mcpRevisionRequest(rev, method, params string) (http.Header, []byte) {
	h := http.Header{"Mcp-Protocol-Version": {rev}}
	if rev >= "2026-07-28" {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + rev + `","io.modelcontextprotocol/clientCapabilities":{}}`
		if params == "" {
			params = "{" + meta + "}"
		} else {
			params = strings.TrimSuffix(params, "}") + "," + meta + "}"
		}
	}
	if params == "" {
		params = "{}"
	}
	if rev >= "2026-07-28" {
		// SEP-2243: the method (and a tool's name) are in headers too.
		h.Set("Mcp-Method", method)
		var p struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		}
		if json.Unmarshal([]byte(params), &p) == nil && p.Name+p.URI != "" {
			h.Set("Mcp-Name", p.Name+p.URI)
		}
	}
	return h, []byte(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`)
}

// rawReply is a JSON-RPC reply as the client parses it.
type rawReply struct {
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func postRevision(t *testing.T, url, rev, method, params string) rawReply {
	t.Helper()
	h, body := mcpRevisionRequest(rev, method, params)
	code, raw, r := mcpPost(t, url, h, body)
	// 2026-07-28's transport answers "method not found" with HTTP 404.
	if (code != http.StatusOK && code != http.StatusNotFound) || r == nil {
		t.Fatalf("%s under %s: HTTP %d %s", method, rev, code, raw)
	}
	text := raw
	if i := strings.Index(raw, "data: "); i >= 0 {
		text = strings.SplitN(raw[i+len("data: "):], "\n", 2)[0]
	}
	var rr rawReply
	if err := json.Unmarshal([]byte(text), &rr); err != nil {
		t.Fatalf("%s under %s: reply %q: %v", method, rev, raw, err)
	}
	return rr
}

func TestMCPResultsFollowTheNegotiatedRevision(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	calls := []struct {
		name, reason, params string
		isError              bool
	}{
		{name: "served", reason: "a result from the backend, with repairs", isError: false,
			params: `{"name":"create_note","arguments":{"title":"Tom &amp;amp; Jerry","tags":"[\"a\",\"b\"]"}}`},
		{name: "invalid-arguments", reason: "the gateway's own isError result (violations)", isError: true,
			params: `{"name":"create_note","arguments":{"title":7}}`},
	}
	revisions := []struct {
		rev, wantResultType, reason string
	}{
		{rev: "2026-07-28", wantResultType: `"complete"`, reason: "SEP-2322: servers implementing 2026-07-28 MUST include resultType"},
		{rev: "2025-11-25", reason: "older revisions are unchanged: no field they do not define"},
		{rev: "2025-06-18", reason: "older revisions are unchanged"},
		{rev: "2025-03-26", reason: "older revisions are unchanged"},
	}
	for _, rv := range revisions {
		for _, c := range calls {
			t.Run(rv.rev+"/"+c.name, func(t *testing.T) {
				r := postRevision(t, env.MCPURL, rv.rev, "tools/call", c.params)
				if r.Error != nil {
					t.Fatalf("JSON-RPC error %d %s (%s)", r.Error.Code, r.Error.Message, c.reason)
				}
				if got := string(r.Result["resultType"]); got != rv.wantResultType {
					t.Errorf("resultType = %s, want %q (%s)", got, rv.wantResultType, rv.reason)
				}
				if got, want := string(r.Result["isError"]) == "true", c.isError; got != want {
					t.Errorf("isError = %v, want %v (%s)", got, want, c.reason)
				}
				if _, ok := r.Result["content"]; !ok {
					t.Errorf("no content in %v", r.Result)
				}
			})
		}
	}
}

func TestMCPServesOnlyWhatItDeclares(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())

	// What each revision's handshake declares.
	init := postRevision(t, env.MCPURL, "2025-11-25", "initialize",
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	disc := postRevision(t, env.MCPURL, "2026-07-28", "server/discover", "")
	for name, caps := range map[string]json.RawMessage{"initialize": init.Result["capabilities"], "server/discover": disc.Result["capabilities"]} {
		var got map[string]json.RawMessage
		if err := json.Unmarshal(caps, &got); err != nil {
			t.Fatalf("%s capabilities %s: %v", name, caps, err)
		}
		if _, ok := got["tools"]; !ok || len(got) != 1 {
			t.Errorf("%s declares %s, want tools alone", name, caps)
		}
	}

	undeclared := []struct{ method, params, reason string }{
		{"prompts/list", "", "prompts are not declared"},
		{"prompts/get", `{"name":"x"}`, "prompts are not declared"},
		{"resources/list", "", "resources are not declared"},
		{"resources/templates/list", "", "resources are not declared"},
		{"resources/read", `{"uri":"file:///etc/passwd"}`, "resources are not declared"},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}`, "completions are not declared"},
		{"logging/setLevel", `{"level":"debug"}`, "logging is not declared"},
	}
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		for _, u := range undeclared {
			if rev >= "2026-07-28" && u.method == "logging/setLevel" {
				continue // removed in 2026-07-28 (the SDK refuses it itself)
			}
			t.Run(rev+"/"+u.method, func(t *testing.T) {
				r := postRevision(t, env.MCPURL, rev, u.method, u.params)
				if r.Error == nil || r.Error.Code != jsonrpc.CodeMethodNotFound {
					t.Fatalf("reply %+v, want method not found (%s)", r, u.reason)
				}
			})
		}
		t.Run(rev+"/tools/list", func(t *testing.T) {
			// reason: the control: what is declared is served
			if r := postRevision(t, env.MCPURL, rev, "tools/list", ""); r.Error != nil {
				t.Fatalf("tools/list: %+v", r.Error)
			}
		})
	}
}
