package server_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// historyTable is the tool page's revision history table.
func historyTable(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `<table id="history">`)
	if i < 0 {
		t.Fatalf("the tool page has no revision history:\n%.3000s", page)
	}
	j := strings.Index(page[i:], "</table>")
	return page[i : i+j]
}

// TestConsoleToolRevisions: the tool page lists the store's kept
// definitions newest first, each with its writer and what it changed from
// the one before (change kinds, compatibility notes, the schema's changed
// members); a backend change is named, never its address, and a viewer
// sees no target of an imported tool's history either.
func TestConsoleToolRevisions(t *testing.T) {
	t.Parallel()
	env, _ := consoleEnv(t)
	ctx := testCtx(t)
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	admin := withKeyCtx(ctx, keyAdmin)
	schema := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const otherBackend = "127.0.0.1:7"
	writes := []*gatewayv1.Tool{
		{Name: "rev.probe", Description: "v1", Backend: env.BackendAddr,
			InputSchema: schema(map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}})},
		{Name: "rev.probe", Description: "v2", Backend: env.BackendAddr,
			InputSchema: schema(map[string]any{"type": "object", "required": []any{"q"}, "properties": map[string]any{"q": map[string]any{"type": "string", "maxLength": 10}}})},
		{Name: "rev.probe", Description: "v2", Backend: otherBackend,
			InputSchema: schema(map[string]any{"type": "object", "required": []any{"q"}, "properties": map[string]any{"q": map[string]any{"type": "string", "maxLength": 10}}})},
	}
	var revs []string
	for _, w := range writes {
		resp, err := rc.RegisterTool(admin, &gatewayv1.RegisterToolRequest{Tool: w})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, strconv.FormatInt(resp.GetTool().GetRevision(), 10))
	}

	u := newConsoleUser(t, env)
	u.login(keyAdmin)
	st, page := u.get("/console/tools/rev.probe")
	if st != http.StatusOK {
		t.Fatalf("tool page = %d:\n%.1500s", st, page)
	}
	table := historyTable(t, page)
	rows := strings.Split(table, "<tr>")[2:] // past the table's start and its header row
	if len(rows) != 3 {
		t.Fatalf("history rows = %d, want one per write (3):\n%s", len(rows), table)
	}
	for i, want := range []struct {
		reason string
		has    []string
	}{
		{"the newest: only the backend moved, named without its address", []string{`<td class="num">` + revs[2] + `<`, "<td>admin</td>", "<td>backend<"}},
		{"the schema narrowed: its kinds, the engine's notes and each changed member", []string{`<td class="num">` + revs[1] + `<`, "<td>admin</td>", "description, incompatible-schema", "newly-required",
			"added <code>/properties/q/maxLength</code>", "added <code>/required</code>"}},
		{"the oldest kept has nothing before it", []string{`<td class="num">` + revs[0] + `<`, "the oldest kept"}},
	} {
		for _, s := range want.has {
			if !strings.Contains(rows[i], s) {
				t.Errorf("history row %d lacks %q (%s):\n%s", i, s, want.reason, rows[i])
			}
		}
	}
	if strings.Contains(table, otherBackend) || strings.Contains(table, env.BackendAddr) {
		t.Errorf("the history shows a backend address:\n%s", table)
	}

	// An imported tool's approved change, read by a viewer.
	before, _ := env.Registry.Lookup(pendingTool)
	if st, page := u.post("/console/pending/"+pendingTool+"/approve", url.Values{"revision": {strconv.FormatInt(before.Tool.Revision, 10)}}); st != http.StatusSeeOther {
		t.Fatalf("approve = %d:\n%.1500s", st, page)
	}
	v := newConsoleUser(t, env)
	v.login(keyViewer)
	st, page = v.get("/console/tools/" + pendingTool)
	if st != http.StatusOK {
		t.Fatalf("viewer's tool page = %d:\n%.1500s", st, page)
	}
	table = historyTable(t, page)
	if !strings.Contains(table, "<td>admin</td>") || !strings.Contains(table, "incompatible-schema") || !strings.Contains(table, "added <code>/required</code>") {
		t.Errorf("the approved change is not in the history with its approver and diff:\n%s", table)
	}
	if strings.Contains(page, pendingURL) || strings.Contains(page, pendingSecretQ) || strings.Contains(page, "127.0.0.1:9") {
		t.Errorf("the viewer's tool page shows the upstream's address or its secret:\n%s", page)
	}
}
