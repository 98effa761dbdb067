package server_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/registry"
)

// TestConsoleUpstreamHealth: the overview shows each upstream MCP server
// tools are imported from with the follower's last listing — listed while
// it answers, failing with the error once it stops — to an admin by its
// URL (no query: pendingFixture's carries a secret), and to a viewer as
// "upstream N" with "an error": no address, no error text.
func TestConsoleUpstreamHealth(t *testing.T) {
	t.Parallel()
	up := mcpupstreamtest.Start(t)
	p, _ := consolePolicy(t)
	p.MCPUpstreams.RelistInterval = time.Second
	schema, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}})
	imported := func(string) registry.Tool {
		return registry.Tool{Name: "up.say_hello", Description: "Greets.", InputSchema: schema,
			Spec:   &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: up.URL, Tool: "say hello"}},
			Origin: &registry.Origin{MCPUpstream: up.URL}}
	}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithTool(pendingFixture), gatewaytest.WithTool(imported))
	admin, viewer := newConsoleUser(t, env), newConsoleUser(t, env)
	admin.login(keyOperator)
	viewer.login(keyViewer)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	upRow := func(page string) string {
		i := strings.Index(page, "<tr><td>"+up.URL+"</td>")
		if i < 0 {
			return ""
		}
		row, _, _ := strings.Cut(page[i:], "</tr>")
		return row
	}
	await := func(what string, ok func(row string) bool) string {
		t.Helper()
		for {
			_, page := admin.get("/console/")
			if ok(upRow(page)) {
				return page
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s; the upstream's row: %q\n%.6000s", what, upRow(page), page)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	page := await("the upstream was never shown listed", func(row string) bool {
		return strings.Contains(row, `<span class="ok">listed</span>`) && strings.Contains(row, `<a href="/console/tools/up.say_hello">up.say_hello</a>`)
	})
	unreachable, _ := url.Parse(pendingURL)
	if !strings.Contains(page, "<tr><td>"+unreachable.String()+"</td>") || strings.Contains(page, pendingSecretQ) {
		t.Errorf("the admin's overview lacks the unreachable upstream %s, or shows its query:\n%.6000s", pendingURL, page)
	}

	up.Close()
	await("the stopped upstream was never shown failing", func(row string) bool {
		return strings.Contains(row, `<span class="bad">failing: `) && strings.Contains(row, "last listed")
	})

	_, seen := viewer.get("/console/")
	for _, addr := range []string{up.URL, strings.TrimPrefix(up.URL, "http://"), "127.0.0.1:9"} {
		if strings.Contains(seen, addr) {
			t.Errorf("a viewer's overview shows the address %s", addr)
		}
	}
	if !strings.Contains(seen, "<tr><td>upstream 1</td>") || !strings.Contains(seen, `<span class="bad">failing: an error</span>`) {
		t.Errorf("a viewer's overview lacks the upstreams without addresses:\n%.6000s", seen)
	}
}
