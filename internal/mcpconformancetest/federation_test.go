package mcpconformancetest

// The fixture's resources, prompts and completions
// (internal/mcpconformancefixture/federation.go) are checked against the
// suite on their own too.

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	fixtureScenarios = append(fixtureScenarios, "resources-list", "resources-read-text", "resources-read-binary",
		"resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple",
		"prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete")
}

// waitFederated waits until the gateway at url declares the fixture's
// resources, prompts and completions: it declares them once it has read
// the upstream's capabilities, which it does in the background.
func waitFederated(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	for {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpconformancetest", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("connecting to the gateway's MCP face: %v", err)
		}
		c := cs.InitializeResult().Capabilities
		cs.Close()
		if c.Resources != nil && c.Prompts != nil && c.Completions != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway never declared the fixture's resources, prompts and completions: %+v", c)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
