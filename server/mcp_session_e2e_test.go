package server_test

// Face sessions before 2026-07-28 (server/mcpapi/session.go): the answer to
// an initialize carries a sealed Mcp-Session-Id, later requests may carry
// it, and one that does not open for the caller is answered 404. The go-sdk
// v1.8.0 client over real HTTP on 127.0.0.1, and raw requests for what it
// never sends.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDo sends one request to the MCP endpoint and returns its status, its
// headers and its body.
func mcpDo(t *testing.T, method, url string, header http.Header, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// sessionKeyFile is a key file for mcp_upstreams.input.key_files.
func sessionKeyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func sessionInitialize(rev string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + rev +
		`","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"raw","version":"0"}}}`
}

func TestMCPSessionIDs(t *testing.T) {
	key := sessionKeyFile(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}},
			{Name: "operator", SHA256: policy.HashAPIKey("operator-key"), Roles: []string{policy.RoleAdmin}},
		}}
		c.Policy.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"agent": {Allow: []string{"create_*"}}}}
		c.Policy.MCPUpstreams.Input.KeyFiles = []string{key}
	}))
	ctx := testCtx(t)
	bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
	const rev = "2025-11-25"
	initialize := sessionInitialize
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	call := string(toolsCall("create_note", `{"title":"t"}`))

	code, h, body := mcpDo(t, http.MethodPost, env.MCPURL, bearer("agent-key"), initialize(rev))
	id := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" || !strings.Contains(body, `"protocolVersion":"`+rev+`"`) {
		t.Fatalf("initialize: HTTP %d, session id %q, body %s; want 200 with a session id", code, id, body)
	}
	if strings.Contains(id, "agent") {
		t.Errorf("session id %q shows its caller: it must be sealed", id)
	}
	with := func(key, sid, version string) http.Header {
		hd := bearer(key)
		hd.Set("Mcp-Protocol-Version", version)
		if sid != "" {
			hd.Set("Mcp-Session-Id", sid)
		}
		return hd
	}
	tampered := []byte(id)
	tampered[len(tampered)/2] ^= 1
	if tampered[len(tampered)/2] == '+' || tampered[len(tampered)/2] == '/' {
		tampered[len(tampered)/2] = 'A'
	}
	rows := []struct {
		reason       string
		method, body string
		header       http.Header
		want         int
		wantBody     string
	}{
		{"a request carrying its session is served (the SDK's path)", http.MethodPost, list, with("agent-key", id, rev), http.StatusOK, "create_note"},
		{"a tools/call carrying its session is served (the fast path)", http.MethodPost, call, with("agent-key", id, rev), http.StatusOK, `"structuredContent"`},
		{"a request without a session is served statelessly, as before", http.MethodPost, list, with("agent-key", "", rev), http.StatusOK, "create_note"},
		{"another caller's session id is unknown to that caller", http.MethodPost, list, with("operator-key", id, rev), http.StatusNotFound, "session not found"},
		{"a changed session id is unknown", http.MethodPost, list, with("agent-key", string(tampered), rev), http.StatusNotFound, "session not found"},
		{"a made-up session id is unknown", http.MethodPost, list, with("agent-key", "abc", rev), http.StatusNotFound, "session not found"},
		{"an oversized session id is unknown", http.MethodPost, list, with("agent-key", strings.Repeat("A", 4096), rev), http.StatusNotFound, "session not found"},
		{"a request under another revision than the session's is served under its own, as without a session", http.MethodPost, list, with("agent-key", id, "2025-03-26"), http.StatusOK, "create_note"},
		{"a DELETE of a session is refused: sealed ids are not revoked", http.MethodDelete, "", with("agent-key", id, rev), http.StatusMethodNotAllowed, "does not terminate sessions"},
		{"a DELETE of an unknown session is 404", http.MethodDelete, "", with("agent-key", "abc", rev), http.StatusNotFound, "session not found"},
	}
	for _, row := range rows {
		t.Run(row.reason, func(t *testing.T) {
			code, _, body := mcpDo(t, row.method, env.MCPURL, row.header, row.body)
			if code != row.want || !strings.Contains(body, row.wantBody) {
				t.Fatalf("HTTP %d %s; want %d with %q (%s)", code, body, row.want, row.wantBody, row.reason)
			}
			if strings.Contains(body, id) {
				t.Errorf("the answer echoes the session id")
			}
		})
	}

	t.Run("an initialize asking for an unknown revision gets a session of the negotiated one", func(t *testing.T) {
		code, h, body := mcpDo(t, http.MethodPost, env.MCPURL, bearer("agent-key"), initialize("2099-01-01"))
		var reply struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		_, data, _ := strings.Cut(body, "data: ")
		if code != http.StatusOK || json.Unmarshal([]byte(strings.TrimSpace(data)), &reply) != nil || reply.Result.ProtocolVersion == "" {
			t.Fatalf("initialize: HTTP %d %s", code, body)
		}
		sid := h.Get("Mcp-Session-Id")
		if sid == "" || reply.Result.ProtocolVersion >= "2026-07-28" {
			t.Fatalf("negotiated %q with session id %q; want a revision before 2026-07-28 and an id", reply.Result.ProtocolVersion, sid)
		}
		if code, _, body := mcpDo(t, http.MethodPost, env.MCPURL, with("agent-key", sid, reply.Result.ProtocolVersion), list); code != http.StatusOK {
			t.Errorf("under the negotiated %s: HTTP %d %s", reply.Result.ProtocolVersion, code, body)
		}
	})

	t.Run("the go-sdk client keeps its session", func(t *testing.T) {
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearer("agent-key"), version: rev, client: &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not asked here")
			}}})
		if cs.ID() == "" {
			t.Fatal("the client has no session id after initialize")
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "t"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call in the session: %v %+v", err, res)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close (DELETE answered 405): %v", err)
		}
	})
}

// TestMCPNoSessionWithoutKeyFiles: without mcp_upstreams.input.key_files
// the face mints no session id (a per-process key would make the other
// replicas answer the session's requests 404) and ignores the header, as
// before.
func TestMCPNoSessionWithoutKeyFiles(t *testing.T) {
	env := mcpAuthEnv(t)
	bearer := http.Header{"Authorization": {"Bearer agent-key"}}
	code, h, body := mcpDo(t, http.MethodPost, env.MCPURL, bearer, sessionInitialize("2025-11-25"))
	if code != http.StatusOK || h.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize: HTTP %d, session id %q, %s; want 200 without one", code, h.Get("Mcp-Session-Id"), body)
	}
	bearer.Set("Mcp-Session-Id", "not-ours")
	bearer.Set("Mcp-Protocol-Version", "2025-11-25")
	if code, _, body := mcpDo(t, http.MethodPost, env.MCPURL, bearer, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`); code != http.StatusOK {
		t.Fatalf("a request with a session id the face never gave: HTTP %d %s; want it served, the header ignored", code, body)
	}
}
