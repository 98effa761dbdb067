package mcpconformancetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpconformancefixture"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGateway runs a gateway (its MCP face on, authentication off: the
// suite's scenarios send no credentials) on an empty bolt store, imports
// every tool of the upstream at upURL under its own name as
// `flowdropctl tools import mcp` does (list, map, RegisterTool), waits
// until its MCP face lists them, and returns the face's URL.
func startGateway(t *testing.T, ctx context.Context, upURL string) string {
	t.Helper()
	listen := func() net.Listener {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		return lis
	}
	cfg := server.DefaultConfig()
	cfg.Store.Kind, cfg.Store.DataDir = server.StoreBolt, t.TempDir()
	cfg.Listeners.GRPC, cfg.Listeners.MCP = listen(), listen()
	// Key files: callers before 2026-07-28 get face sessions, so the
	// fixture's elicitation and sampling reach them on their calls' streams.
	keyFile := filepath.Join(t.TempDir(), "input.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Policy.MCPUpstreams.Input.KeyFiles = []string{keyFile}
	// Every caller may list and read the fixture's resources (without a
	// resource allow list none are offered).
	cfg.Policy.Authz.Default.Resources.Allow = []string{"*"}
	g, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g.Close(sctx)
	})

	up, err := mcpupstream.Connect(ctx, upURL, mcpupstream.Header{}, mcpupstream.ConnectOptions{})
	if err != nil {
		t.Fatalf("connecting to the fixture: %v", err)
	}
	listed, err := mcpimport.List(ctx, up)
	up.Close()
	if err != nil {
		t.Fatalf("listing the fixture's tools: %v", err)
	}
	tools, skipped, err := mcpimport.Tools(listed, mcpimport.Options{URL: upURL})
	if err != nil || len(skipped) != 0 {
		t.Fatalf("importing the fixture's tools: %v, skipped %v", err, skipped)
	}
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := gatewayv1.NewToolRegistryServiceClient(conn)
	var want []string
	for _, tool := range tools {
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("registering %s: %v", tool.GetName(), err)
		}
		// A task-required tool is not listed to this client (2026-07-28
		// without the tasks extension) once the face has read the fixture.
		if !slices.Contains(mcpconformancefixture.TaskRequiredTools, tool.GetName()) {
			want = append(want, tool.GetName())
		}
	}
	slices.Sort(want)

	// The MCP face follows the registry asynchronously.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpconformancetest", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.MCPURL()}, nil)
	if err != nil {
		t.Fatalf("connecting to the gateway's MCP face: %v", err)
	}
	defer cs.Close()
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list on the gateway: %v", err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			waitFederated(t, ctx, g.MCPURL()) // federation_test.go
			return g.MCPURL()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway's MCP face lists %v, want %v", got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
