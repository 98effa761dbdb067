package server_test

// tools/list answered by the face (server/mcpapi/toolslist.go) against the
// go-sdk's own listing filtered per caller (MCPConfig.SDKOnly, the former
// way): the same requests to two gateways over real HTTP on 127.0.0.1; the
// answers must be the same for a registry smaller than a page. Then paging
// a caller's view of a registry larger than a page while tools are added
// and deleted on both sides of the cursor.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/pagingtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// listDiffEnv is searchEnv's policy (discovery for "agent" and
// "explorer", the full list for "lister", everything for "operator") with
// tools that carry output schemas, annotations and an x-mcp-header
// annotation, two bundles (one listed, one in discovery mode), and the
// face's listing on or off.
func listDiffEnv(t *testing.T, sdkOnly bool) *gatewaytest.Env {
	schema := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(searchPolicy()),
		gatewaytest.WithConfig(func(c *server.Config) { c.MCP.SDKOnly = sdkOnly }),
		gatewaytest.WithTool(func(backend string) registry.Tool {
			return registry.Tool{Name: "create_report", Description: "Create a report <b>&</b> return it.", Backend: backend,
				InputSchema:  schema(map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}),
				OutputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}),
				Annotations:  &registry.ToolAnnotations{ReadOnlyHint: new(true), DestructiveHint: new(false), OpenWorldHint: new(true)}}
		}),
		gatewaytest.WithTool(func(backend string) registry.Tool {
			return registry.Tool{Name: "update_region", Backend: backend, Annotations: &registry.ToolAnnotations{IdempotentHint: new(true)},
				InputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{
					"region": map[string]any{"type": "string", "x-mcp-header": "Region"}}})}
		}))
	ctx := testCtx(t)
	for _, b := range []registry.Bundle{
		{Name: "notes", Tools: []string{"create_note", "create_report", "update_settings"}},
		{Name: "notes_search", Tools: []string{"create_note", "apply_ops"}, Discovery: registry.DiscoverySearch},
	} {
		if _, err := env.Store.PutBundle(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := poll(10*time.Second, func() error {
		for _, name := range []string{"notes", "notes_search"} {
			if _, ok := env.Registry.Snapshot().Bundle(name); !ok {
				return fmt.Errorf("bundle %s not served yet", name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestMCPToolsListMatchesSDK sends every tools/list request to a gateway
// whose face lists tools and to one whose SDK does: status, headers and
// parsed body must be equal — every revision (caching hints and resultType
// from 2026-07-28), every view (full list, denied tools, discovery mode by
// caller and by bundle, a bundle's list), every definition part (output
// schemas, annotations, HTML in descriptions left unescaped).
func TestMCPToolsListMatchesSDK(t *testing.T) {
	t.Parallel()
	face, sdk := listDiffEnv(t, false), listDiffEnv(t, true)

	const newRevision = "2026-07-28"
	header := func(rev, key string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		if rev != "" {
			h.Set("Mcp-Protocol-Version", rev)
		}
		if rev >= newRevision {
			h.Set("Mcp-Method", "tools/list")
		}
		return h
	}
	list := func(rev, id, params string) string {
		if rev >= newRevision {
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"diff","version":"1"}}`
			if params == "" || params == "{}" {
				params = "{" + meta + "}"
			} else {
				params = strings.Replace(params, "{", "{"+meta+",", 1)
			}
		}
		if params == "" {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list"}`, id)
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list","params":%s}`, id, params)
	}
	type row struct {
		name, reason, path string
		header             http.Header
		body               string
	}
	var rows []row
	for _, rev := range append([]string{""}, mcp.SupportedProtocolVersions()...) {
		at := func(s string) string { return fmt.Sprintf("%s (revision %q)", s, rev) }
		rows = append(rows,
			row{at("lister"), "the full list a caller may see: every definition part", "", header(rev, "lister-key"), list(rev, "1", `{}`)},
			row{at("lister, no params"), "params are optional", "", header(rev, "lister-key"), list(rev, `"a"`, "")},
			row{at("operator"), "an admin sees every tool", "", header(rev, "operator-key"), list(rev, "2", `{}`)},
			row{at("agent"), "discovery mode by name: the two meta-tools", "", header(rev, "agent-key"), list(rev, "3", `{}`)},
			row{at("explorer"), "discovery mode by role", "", header(rev, "explorer-key"), list(rev, "4", `{}`)},
			row{at("bundle"), "a bundle's endpoint lists the bundle's tools the caller may see", "/notes", header(rev, "lister-key"), list(rev, "5", `{}`)},
			row{at("bundle, limited caller"), "a denied tool in the bundle is not listed", "/notes", header(rev, "explorer-key"), list(rev, "6", `{}`)},
			row{at("search bundle"), "a bundle in discovery mode offers the meta-tools to everyone", "/notes_search", header(rev, "lister-key"), list(rev, "7", `{}`)},
			row{at("no credentials"), "401 before either listing", "", header(rev, ""), list(rev, "8", `{}`)},
			row{at("params not an object"), "the SDK's decoding refuses it", "", header(rev, "lister-key"), list(rev, "9", `[]`)},
		)
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := postAnswer(t, face.MCPURL+r.path, r.header, r.body)
			want := postAnswer(t, sdk.MCPURL+r.path, r.header, r.body)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("the face listed\n%s\nthe SDK listed\n%s\n(%s)", g, w, r.reason)
			}
			if r.reason == "the full list a caller may see: every definition part" && !strings.Contains(fmt.Sprint(got), "create_report") {
				t.Errorf("the listing %v lacks create_report: the comparison compared nothing", got)
			}
		})
	}

	// The SDK still checks Mcp-Param-* headers of a tool whose schema
	// carries x-mcp-header (it holds that tool): a mismatch is refused the
	// same way on both.
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"update_region","arguments":{"region":"eu"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	h := header(newRevision, "operator-key")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "update_region")
	h.Set("Mcp-Param-Region", "us")
	got, want := postAnswer(t, face.MCPURL, h, call), postAnswer(t, sdk.MCPURL, h, call)
	if !reflect.DeepEqual(got, want) || got.Status != http.StatusBadRequest {
		t.Errorf("Mcp-Param-Region mismatch: the face's gateway answered %+v, the SDK's %+v; want both the SDK's 400", got, want)
	}

	// A cursor this server did not issue: invalid params on both (the
	// face's message says more; the code is the SDK's).
	for _, cursor := range []string{"not-base64!", strings.Repeat("A", 200), "bDE6", "eDp4"} {
		body := list("2025-06-18", "1", fmt.Sprintf(`{"cursor":%q}`, cursor))
		got := postAnswer(t, face.MCPURL, header("2025-06-18", "lister-key"), body)
		if len(got.Events) != 1 || fmt.Sprint(got.Events[0].Data.(map[string]any)["error"].(map[string]any)["code"]) != "-32602" {
			t.Errorf("cursor %q: %+v; want invalid params (-32602)", cursor, got)
		}
	}
}

// TestMCPToolsListPagesEveryVisibleToolOnceUnderChange pages one caller's
// view (a policy hiding some tools) of a registry larger than a page with
// the SDK's client, while tools are added and deleted between pages on
// both sides of the cursor and a writer keeps changing tools concurrently:
// every visible tool present throughout comes exactly once, in name order;
// one added ahead of the cursor comes; one deleted ahead does not; nothing
// hidden comes; and pages are full (a caller who sees few tools gets no
// sparse pages).
func TestMCPToolsListPagesEveryVisibleToolOnceUnderChange(t *testing.T) {
	t.Parallel()
	const n = 3000 // three pages of 1,000 visible tools and a part
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := server.DemoPolicy()
	p.Admin.ListenAddr = ""
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "c", SHA256: policy.HashAPIKey("c-key"), Roles: []string{policy.RoleInvoker}}}}
	access := policy.ToolAccess{Allow: []string{"t-*"}, Deny: []string{"*30", "*70"}}
	p.Authz = policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"c": access}}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))
	az, err := policy.NewAuthorizer(policy.AuthzConfig{Callers: map[string]policy.ToolAccess{"c": access}})
	if err != nil {
		t.Fatal(err)
	}
	visible := func(name string) bool {
		return strings.HasPrefix(name, "t-") && az.ToolAllowed(policy.Caller{Subject: "c"}, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a guard, not a timing
	defer cancel()
	tool := func(name string) registry.Tool {
		return registry.Tool{Name: name, Backend: env.BackendAddr, InputSchema: schema}
	}
	// Registered after the start (each compiled as it comes), not in it:
	// a start compiling them all would not fit its bound under -race.
	for i := range n {
		if _, err := env.Registry.Register(ctx, tool(fmt.Sprintf("t-%05d", i*10)), registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: bearerKey("c-key")})

	// A writer re-registering tools all along (new entries, same names):
	// the listing must neither lose nor repeat them. It owns the names
	// ending in 90 (visible); the pages' own changes leave those alone.
	writerOwns := func(name string) bool { return strings.HasSuffix(name, "90") }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t2 := tool(fmt.Sprintf("t-%05d", ((i*7919)%(n/10)*10+9)*10))
			t2.Description = fmt.Sprintf("rewritten %d", i)
			if _, err := env.Registry.Register(ctx, t2, registry.RegisterOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	})

	touched := map[string]bool{}
	var addedAhead, deletedAhead, got []string
	cursor := ""
	var sizes []int
	for page := 0; ; page++ {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(res.Tools))
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
		if page > 10 {
			t.Fatal("paging does not end")
		}
		if len(cursor) > 200 {
			t.Fatalf("cursor of %d bytes: not bounded by a name", len(cursor))
		}
		last := got[len(got)-1]
		var li int
		fmt.Sscanf(last, "t-%05d", &li)
		for k := range 20 {
			behind, ahead := li-10*(1+k), li+10*(3+k)
			for _, c := range []struct {
				name       string
				add, ahead bool
			}{
				{fmt.Sprintf("t-%05d", behind+5), true, false},
				{fmt.Sprintf("t-%05d", ahead+5), true, true},
				{fmt.Sprintf("t-%05d", behind), false, false},
				{fmt.Sprintf("t-%05d", ahead), false, true},
			} {
				if touched[c.name] || behind < 0 || writerOwns(c.name) {
					continue
				}
				touched[c.name] = true
				if c.add {
					if _, err := env.Registry.Register(ctx, tool(c.name), registry.RegisterOptions{}); err != nil {
						t.Fatal(err)
					}
					if c.ahead && visible(c.name) {
						addedAhead = append(addedAhead, c.name)
					}
				} else if err := env.Registry.Delete(ctx, c.name, nil); err == nil && c.ahead && visible(c.name) {
					deletedAhead = append(deletedAhead, c.name)
				}
			}
		}
	}
	close(stop)
	wg.Wait()

	var tools []string
	for _, name := range got {
		if strings.HasPrefix(name, "t-") {
			tools = append(tools, name)
		}
	}
	for i, size := range sizes[:len(sizes)-1] {
		if size != 1000 {
			t.Errorf("page %d holds %d tools; want full pages of 1,000 (sizes %v)", i, size, sizes)
		}
	}
	initial := make([]string, n)
	for i := range n {
		initial[i] = fmt.Sprintf("t-%05d", i*10)
	}
	pagingtest.Check(t, pagingtest.Paged{Got: tools, Initial: initial, Visible: visible, Touched: touched,
		AddedAhead: addedAhead, DeletedAhead: deletedAhead})
}
