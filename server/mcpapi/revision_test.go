package mcpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCompleteUnder: the federated results the go-sdk gives no resultType
// carry "complete" from 2026-07-28 on, and nothing before it, with the
// fields set after the call kept.
func TestCompleteUnder(t *testing.T) {
	for _, tc := range []struct {
		name, reason, rev string
		want              bool
	}{
		{"2026", "2026-07-28 requires resultType on every result", "2026-07-28", true},
		{"2025", "older clients do not know the field", "2025-11-25", false},
		{"none", "a request that names no revision", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := completeUnder(tc.rev, &mcp.ReadResourceResult{})
			read.Contents = []*mcp.ResourceContents{{URI: "test://x", Text: "x"}}
			prompt := completeUnder(tc.rev, &mcp.GetPromptResult{})
			prompt.Messages = []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "x"}}}
			for _, r := range []mcp.Result{read, prompt} {
				b, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Contains(string(b), `"resultType":"complete"`); got != tc.want || !strings.Contains(string(b), `"x"`) {
					t.Fatalf("%s: %s", tc.reason, b)
				}
			}
		})
	}
}
