package main

import (
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
)

func everythingNode(t *testing.T) (node, script string) { return gatewaytest.Everything(t) }

func startEverything(t *testing.T, node, script, transport string) string {
	return gatewaytest.StartEverything(t, node, script, transport)
}

// TestToolsImportMCPTaskSupport imports server-everything, whose
// simulate-research-query declares execution.taskSupport "required" (the
// go-sdk's Tool drops it), over each transport: the import says, per such
// tool, to whom the gateway offers it — in the normal output and with
// --dry-run — and says nothing of a tool that takes no tasks.
func TestToolsImportMCPTaskSupport(t *testing.T) {
	node, script := everythingNode(t)
	httpAddr := startEverything(t, node, script, "streamableHttp")
	sseAddr := startEverything(t, node, script, "sse")
	gw := startRegistryGateway(t)
	const offered = "task-required ev.simulate-research-query: the upstream requires task augmentation for it (execution.taskSupport \"required\"), so it is offered only to callers that can use tasks (MCP 2025-11-25, or 2026-07-28 declaring the io.modelcontextprotocol/tasks extension)"
	cases := []struct {
		name, reason string
		args         []string
		want         string
	}{
		{name: "streamable", reason: "over streamable HTTP the taskSupport is read from the upstream's raw tools/list; the tools are registered",
			args: []string{"--url", "http://" + httpAddr + "/mcp", "--addr", gw}, want: offered},
		{name: "streamable-dry-run", reason: "--dry-run says the same",
			args: []string{"--url", "http://" + httpAddr + "/mcp", "--dry-run"}, want: offered},
		{name: "sse-detected", reason: "over legacy HTTP+SSE (detected) the listing is read through as it passes",
			args: []string{"--url", "http://" + sseAddr + "/sse", "--dry-run"}, want: offered},
		{name: "stdio", reason: "a stdio upstream on 2025-11-25 has its tasks carried (side.go): the tool is offered to callers that can use tasks, as over HTTP",
			args: []string{"--stdio", "ev", "--dry-run", "--", node, script, "stdio"}, want: offered},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"tools", "import", "mcp", "--prefix", "ev."}, c.args...)
			code, out, errOut := ctl(t, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", c.reason, code, errOut)
			}
			if !strings.Contains(out, "ev.simulate-research-query") || !strings.Contains(out, "ev.echo") {
				t.Errorf("%s: stdout %q: want the tools imported", c.reason, out)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("%s: stderr %q: want %q", c.reason, errOut, c.want)
			}
			if n := strings.Count(errOut, "task-"); n != 1 {
				t.Errorf("%s: stderr %q: %d task lines, want the one task-required tool's", c.reason, errOut, n)
			}
		})
	}
}
