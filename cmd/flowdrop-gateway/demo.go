package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/server"
)

// startDemoBackend serves the example tool service on a random loopback port.
func startDemoBackend(log *slog.Logger) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	gs := demotools.NewGRPCServer(demotools.New(), log.With("component", "example-tools"))
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	return lis.Addr().String(), func() { gs.Stop(); <-done }, nil
}

// demoCallArgs are the arguments of the banner's example call: a title
// escaped twice and tags sent as a JSON string, both repaired by RT-TOOL-8.
const demoCallArgs = `{"title":"Ember &amp;amp; Oak","tags":"[\"a\",\"b\"]"}`

// printBanner tells a person where the gateway listens and gives a call to
// paste.
func printBanner(w io.Writer, g *server.Gateway, demoAddr string) {
	entries := g.Registry().Snapshot().List()
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Tool.Name
	}
	addr := g.GRPCAddr()
	fmt.Fprintf(w, "flowdrop gateway listening on %s (plaintext gRPC; health and reflection enabled)\n", addr)
	if demoAddr != "" {
		fmt.Fprintf(w, "example tool service running in-process on %s\n", demoAddr)
	}
	fmt.Fprintf(w, "tools: %s\n", strings.Join(names, ", "))
	// The demo call when create_note is there (the demo tools, or a file
	// printed by cmd/example-tools); else the first tool with no arguments.
	tool, args := "create_note", demoCallArgs
	if !slices.Contains(names, tool) && len(names) > 0 {
		tool, args = names[0], `{}`
	}
	// With authentication on, the lines carry the credential header with a
	// placeholder (never a real key: the gateway only knows hashes).
	header, env := "", ""
	if g.AuthenticationOn() {
		header, env = "-H 'x-api-key: <your API key>' ", "FLOWDROP_API_KEY='<your API key>' "
	}
	fmt.Fprintf(w, "\ntry it:\n  grpcurl -plaintext %s-d '{\"tool\":%q,\"arguments\":%s}' %s %s/InvokeTool\n",
		header, tool, args, addr, gatewayv1.ToolGatewayService_ServiceDesc.ServiceName)
	fmt.Fprintf(w, "  %sgo run ./cmd/flowdropctl invoke %s --addr %s --args '%s'\n\n", env, tool, addr, args)
	if u := g.MCPURL(); u != "" {
		fmt.Fprintf(w, "MCP endpoint (streamable HTTP): %s\n", u)
	}
	if a := g.AdminAddr(); a != "" {
		// Where an operator looks first (docs/operations.md).
		fmt.Fprintf(w, "operator's console: http://%s/console/ (status page http://%s/, metrics /metrics)\n", a, a)
	}
	fmt.Fprintln(w)
}
