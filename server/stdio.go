package server

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

// Warnings about the stdio MCP servers the policy declares and the tools
// that name them: the gateway starts either way (the policy may be shared
// by hosts and replicas that differ), but says which tools will answer
// Unavailable.

// warnUnconfiguredStdio logs, once per tool revision, a tool naming a
// stdio server this gateway's policy does not declare (a typo, or a
// replica configured differently): its calls answer Unavailable. warned
// holds the revisions already logged and is pruned to entries.
func (g *Gateway) warnUnconfiguredStdio(entries []*registry.Entry, warned map[*registry.Entry]bool) {
	live := make(map[*registry.Entry]bool, len(entries))
	for _, e := range entries {
		live[e] = true
		sp := e.Tool.Spec
		if sp == nil || sp.MCPTool == nil || warned[e] {
			continue
		}
		if name, ok := registry.StdioName(sp.MCPTool.URL); ok {
			if _, configured := g.stdio[name]; !configured {
				g.log.Warn("a tool names a stdio server this gateway does not run: its calls will be unavailable",
					"tool", e.Tool.Name, "server", policy.Bound(name))
				warned[e] = true
			}
		}
	}
	for e := range warned {
		if !live[e] {
			delete(warned, e)
		}
	}
}

// warnUnrunnableStdio logs each configured stdio server whose executable
// this host cannot run: the gateway still starts (the policy may be shared
// by hosts that differ), but its tools will answer Unavailable.
func warnUnrunnableStdio(log *slog.Logger, servers map[string]mcpupstream.Command) {
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := runnable(servers[name].Path); err != nil {
			log.Warn("mcp stdio server cannot run here: its tools will be unavailable", "server", name, "err", err)
		}
	}
}

// runnable is nil when path is an executable file on this host.
func runnable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
