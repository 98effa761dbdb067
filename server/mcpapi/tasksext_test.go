package mcpapi

import (
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
