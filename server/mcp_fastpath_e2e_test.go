package server_test

// The MCP face's tools/call fast path (server/mcpapi/fastpath.go) against
// the go-sdk's handler: the same requests to two gateways, one with the fast
// path on and one with it off (MCPConfig.SDKOnly), over real HTTP on
// 127.0.0.1; the answers must be the same.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDiffEnv is a gateway with authentication on ("agent" may invoke
// create_* and update_* but not update_settings), its MCP fast path on or
// off.
func mcpDiffEnv(t *testing.T, sdkOnly bool) *gatewaytest.Env {
	return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.MCP.SDKOnly = sdkOnly
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{
			"agent": {Allow: []string{"create_*", "update_*"}, Deny: []string{"update_settings"}},
		}}
	}))
}

// httpAnswer is what a client can see of an MCP HTTP response.
type httpAnswer struct {
	Status  int
	Headers http.Header
	Framing []string
	// Events are the SSE events (name and parsed data); Body the parsed
	// JSON body, or the text when it is not JSON.
	Events []sseEvent
	Body   any
}

type sseEvent struct {
	Name string
	Data any
}

func postAnswer(t *testing.T, url string, header http.Header, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Every header but Date; and how the body was framed.
	a := httpAnswer{Status: resp.StatusCode, Headers: resp.Header.Clone(), Framing: resp.TransferEncoding}
	delete(a.Headers, "Date")
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var ev sseEvent
		for line := range strings.Lines(string(raw)) {
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data); err != nil {
					t.Fatalf("SSE data is not JSON: %q", line)
				}
			case line == "":
				a.Events = append(a.Events, ev)
				ev = sseEvent{}
			default:
				t.Fatalf("unexpected SSE line %q in %q", line, raw)
			}
		}
		return a
	}
	if json.Unmarshal(raw, &a.Body) != nil {
		a.Body = string(raw)
	}
	return a
}

// TestMCPFastPathMatchesSDK sends every request to a gateway whose fast path
// is on and to one whose fast path is off: status, headers and parsed body
// must be equal, and the fast path must have answered exactly the requests
// it is meant to (the rest fall through to the SDK).
func TestMCPFastPathMatchesSDK(t *testing.T) {
	t.Parallel()
	fast, sdk := mcpDiffEnv(t, false), mcpDiffEnv(t, true)

	const (
		args        = `{"title":"Ember & Oak","tags":["a","b"],"body":"hello"}`
		newRevision = "2026-07-28"
		newMeta     = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"diff","version":"1"}`
	)
	type row struct {
		name, reason string
		header       http.Header
		body         string
		fast         bool // the fast path answers it
	}
	base := func(rev, tool string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "X-Api-Key": {"agent-key"}}
		if rev != "" {
			h.Set("Mcp-Protocol-Version", rev)
		}
		if rev >= newRevision {
			h.Set("Mcp-Method", "tools/call")
			h.Set("Mcp-Name", tool)
		}
		return h
	}
	call := func(rev, id, tool, argsJSON, extraMeta string) string {
		meta := extraMeta
		if rev >= newRevision {
			meta = strings.Trim(newMeta+","+extraMeta, ",")
		}
		arguments := ""
		if argsJSON != "" {
			arguments = `"arguments":` + argsJSON + ","
		}
		params := fmt.Sprintf(`{"name":%q,%s"_meta":{%s}}`, tool, arguments, meta)
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, id, params)
	}
	var rows []row
	// Every outcome under every revision the SDK serves ("" is a client
	// that sends no MCP-Protocol-Version header).
	for _, rev := range append([]string{""}, mcp.SupportedProtocolVersions()...) {
		at := func(s string) string { return fmt.Sprintf("%s (revision %q)", s, rev) }
		rows = append(rows,
			row{at("ok"), "a clean call: its result, resultType per revision, serverInfo from 2026-07-28", base(rev, "create_note"), call(rev, "1", "create_note", args, ""), true},
			row{at("isError"), "a schema violation is an isError result", base(rev, "create_note"), call(rev, "2", "create_note", `{"title":""}`, ""), true},
			row{at("invalid params"), "arguments that are not an object: invalid params (HTTP 400 from 2026-07-28)", base(rev, "create_note"), call(rev, "3", "create_note", `["x"]`, ""), true},
			row{at("malformed arguments"), "a duplicate key the strict parser refuses: invalid params naming the path", base(rev, "create_note"), call(rev, "4", "create_note", `{"title":"a","title":"b"}`, ""), true},
			row{at("unknown tool"), "an unknown tool is invalid params", base(rev, "no_such_tool"), call(rev, "5", "no_such_tool", `{}`, ""), true},
			row{at("denied tool"), "a denied tool is refused as the SDK path refuses it", base(rev, "update_settings"), call(rev, "6", "update_settings", `{"settings":{}}`, ""), true},
			row{at("no arguments"), "absent arguments are an empty object", base(rev, "create_note"), call(rev, "7", "create_note", "", ""), true},
			row{at("meta"), "progressToken, call id and idempotency key in _meta", base(rev, "create_note"), call(rev, "8", "create_note", args, `"progressToken":"p-1","flowdrop/call_id":"call-8","flowdrop/idempotency_key":"key-8`+strings.ReplaceAll(rev, "-", "")+`"`), true},
			row{at("meta replayed"), "the same idempotency key again: the stored outcome, marked replayed", base(rev, "create_note"), call(rev, "9", "create_note", args, `"flowdrop/idempotency_key":"key-8`+strings.ReplaceAll(rev, "-", "")+`"`), true},
			row{at("idempotency key not a string"), "refused as invalid params", base(rev, "create_note"), call(rev, "10", "create_note", args, `"flowdrop/idempotency_key":7`), true},
		)
	}
	// JSON-RPC ids of every type, old and new protocol.
	for _, rev := range []string{"2025-06-18", newRevision} {
		for _, id := range []string{`"abc"`, `""`, `"\u00e9\n"`, `0`, `-3`, `42`, `9007199254740993`, `1e3`, `1.5`, `123456789012345678901234567890`} {
			rows = append(rows, row{fmt.Sprintf("id %s (revision %s)", id, rev), "the id is echoed as the SDK echoes it", base(rev, "create_note"), call(rev, id, "create_note", args, ""), true})
		}
	}
	ok := call("2025-06-18", "1", "create_note", args, "")
	okNew := call(newRevision, "1", "create_note", args, "")
	with := func(h http.Header, k, v string) http.Header {
		h = h.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	rows = append(rows,
		row{"accept */*", "the SDK takes */* for both types", with(base("2025-06-18", ""), "Accept", "*/*"), ok, true},
		row{"accept with parameters", "Accept parameters are ignored", with(base("2025-06-18", ""), "Accept", "application/json;q=0.9, text/event-stream;q=1"), ok, true},
		row{"content type with charset", "the media type's parameters are ignored", with(base("2025-06-18", ""), "Content-Type", "application/json; charset=utf-8"), ok, true},
		row{"accept JSON only", "the SDK refuses it (400): the fast path leaves it to the SDK", with(base("2025-06-18", ""), "Accept", "application/json"), ok, false},
		row{"wrong content type", "415 from the SDK", with(base("2025-06-18", ""), "Content-Type", "text/plain"), ok, false},
		row{"unsupported revision header", "the SDK refuses an unknown older revision", with(base("2025-06-18", ""), "Mcp-Protocol-Version", "2024-01-01"), ok, false},
		row{"future revision header", "a revision the SDK does not know", with(base("2025-06-18", ""), "Mcp-Protocol-Version", "2099-01-01"), ok, false},
		row{"Last-Event-ID", "the SDK refuses it on POST", with(base("2025-06-18", ""), "Last-Event-ID", "x_1"), ok, false},
		row{"no credentials", "401 before either path", with(base("2025-06-18", ""), "X-Api-Key", ""), ok, false},
		row{"batch", "a batch is the SDK's", base("2025-03-26", ""), "[" + call("2025-03-26", "1", "create_note", args, "") + "]", false},
		row{"notification", "no id: the SDK's", base("2025-06-18", ""), `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"create_note","arguments":{}}}`, false},
		row{"null id", "a null id is no id", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"create_note","arguments":{}}}`, false},
		row{"tools/list", "other methods are the SDK's", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, false},
		row{"wrong jsonrpc version", "the SDK's refusal", base("2025-06-18", ""), strings.Replace(ok, `"2.0"`, `"1.0"`, 1), false},
		row{"no params", "the SDK's refusal", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		row{"params null", "decodes to no params: missing tool name", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, false},
		row{"name not a string", "the SDK's decoding refuses it", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`, false},
		row{"missing name", "an empty name: the face's own invalid params", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, true},
		row{"trailing data", "readBody refuses it", base("2025-06-18", ""), ok + ` {}`, false},
		row{"not JSON", "readBody refuses it", base("2025-06-18", ""), `{"jsonrpc":"2.0",`, false},
		row{"case-folded keys", "the SDK matches field names case-sensitively", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"create_note","arguments":{}}}`, true},
		row{"unknown members", "ignored by the SDK's decoding", base("2025-06-18", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/call","x":[1],"params":{"name":"create_note","arguments":` + args + `,"y":{}}}`, true},
		row{"new: no Mcp-Name", "the SDK's header check", with(base(newRevision, "create_note"), "Mcp-Name", ""), okNew, false},
		row{"new: Mcp-Name mismatch", "the SDK's header check", with(base(newRevision, "create_note"), "Mcp-Name", "other"), okNew, false},
		row{"new: no Mcp-Method", "the SDK's header check", with(base(newRevision, "create_note"), "Mcp-Method", ""), okNew, false},
		row{"new: no meta version", "the SDK's _meta check", base(newRevision, "create_note"), call("", "1", "create_note", args, `"io.modelcontextprotocol/clientCapabilities":{}`), false},
		row{"new: meta version mismatch", "header and _meta disagree", base(newRevision, "create_note"), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2025-06-18"`), false},
		row{"new: no capabilities", "the SDK requires clientCapabilities", base(newRevision, "create_note"), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), false},
		row{"new: bad clientInfo", "the SDK refuses a clientInfo it cannot decode", base(newRevision, "create_note"), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"x"`), false},
		row{"new: no clientInfo", "clientInfo is optional", base(newRevision, "create_note"), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}`), true},
		row{"old: meta version matches header", "a 2025 revision named in _meta and the header", base("2025-06-18", ""), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2025-06-18"`), true},
		row{"old: meta version without header", "the SDK requires the header", with(base("2025-06-18", ""), "Mcp-Protocol-Version", ""), call("", "1", "create_note", args, `"io.modelcontextprotocol/protocolVersion":"2025-06-18"`), false},
	)

	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			before := fast.Gateway.MCPFastCalls()
			got := postAnswer(t, fast.MCPURL, r.header, r.body)
			want := postAnswer(t, sdk.MCPURL, r.header, r.body)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("fast path answered\n%s\nthe SDK answered\n%s\n(%s)", g, w, r.reason)
			}
			if answered := fast.Gateway.MCPFastCalls() - before; answered != map[bool]uint64{true: 1}[r.fast] {
				t.Errorf("fast path answered %d requests, want fast=%v (%s)", answered, r.fast, r.reason)
			}
		})
	}
	if n := sdk.Gateway.MCPFastCalls(); n != 0 {
		t.Errorf("SDKOnly gateway's fast path answered %d calls", n)
	}
}
