package server_test

// The default store end to end through Start: a bolt file in the data
// directory keeps registered tools (same revisions) across a restart, the
// tools file re-seeds without bumping revisions, and the demo tools follow
// the demo backend to its new port.

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// runningGateway is a started gateway with the demo tools on a demo
// backend of its own (a new port each start, like the binary's demo mode).
type runningGateway struct {
	gw   gatewayv1.ToolGatewayServiceClient
	reg  gatewayv1.ToolRegistryServiceClient
	g    *server.Gateway
	conn *grpc.ClientConn
	done bool
}

// demoTools starts an example tool service on a free 127.0.0.1 port and
// returns the demo tools pointing at it.
func demoTools(t *testing.T) []registry.Tool {
	t.Helper()
	blis := gatewaytest.Listen(t)
	bs := demotools.NewGRPCServer(demotools.New(), nil)
	go bs.Serve(blis)
	t.Cleanup(bs.Stop)
	demo, err := registry.ParseTools(demotools.ToolsYAML(blis.Addr().String()), "embedded demo tools")
	if err != nil {
		t.Fatal(err)
	}
	return demo
}

func startRun(t *testing.T, cfg server.Config) *runningGateway {
	t.Helper()
	cfg.Tools = append(demoTools(t), cfg.Tools...)
	g, err := server.Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("gateway did not start: %v", err)
	}
	conn, err := grpc.NewClient(g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	rg := &runningGateway{g: g, conn: conn, gw: gatewayv1.NewToolGatewayServiceClient(conn), reg: gatewayv1.NewToolRegistryServiceClient(conn)}
	t.Cleanup(func() { rg.stop(t) })
	return rg
}

// stop closes the gateway like SIGTERM does, bounded.
func (g *runningGateway) stop(t *testing.T) {
	t.Helper()
	if g.done {
		return
	}
	g.done = true
	g.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := g.g.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func (g *runningGateway) revision(ctx context.Context, t *testing.T, name string) *gatewayv1.Tool {
	t.Helper()
	resp, err := g.reg.GetTool(ctx, &gatewayv1.GetToolRequest{Name: name})
	if err != nil {
		t.Fatalf("GetTool(%s): %v", name, err)
	}
	return resp.GetTool()
}

func TestRunBoltStoreSurvivesRestart(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(toolsFile, []byte("tools:\n  - name: file_tool\n    backend: 127.0.0.1:7001\n    input_schema: {type: object}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.ShutdownGrace = 2 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.ToolsFile = toolsFile
	cfg.Store.DataDir = filepath.Join(dir, "data")
	if cfg.Store.Kind != server.StoreBolt {
		t.Fatalf("default store kind %q, want %q", cfg.Store.Kind, server.StoreBolt)
	}
	note := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: &structpb.Struct{Fields: map[string]*structpb.Value{
		"title": structpb.NewStringValue("kept"),
	}}}

	first := startRun(t, cfg)
	reg, err := first.reg.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: &gatewayv1.Tool{
		Name: "registered_tool", Backend: "127.0.0.1:7002",
		InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
	}})
	if err != nil {
		t.Fatalf("RegisterTool: %v", err)
	}
	fileBefore := first.revision(ctx, t, "file_tool")
	noteBefore := first.revision(ctx, t, "create_note")
	if _, err := first.gw.InvokeTool(ctx, note); err != nil {
		t.Fatalf("create_note on the first run: %v", err)
	}

	// A second gateway on the same data directory is refused while the
	// first holds the file, naming it, instead of sharing it unsafely.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = server.Start(rctx, cfg)
	rcancel()
	if err == nil || !strings.Contains(err.Error(), "locked by another process") ||
		!strings.Contains(err.Error(), cfg.Store.BoltPath()) {
		t.Errorf("second Start on a data dir in use = %v; want an error naming %s as locked", err, cfg.Store.BoltPath())
	}

	first.stop(t)
	if _, err := os.Stat(cfg.Store.BoltPath()); err != nil {
		t.Fatalf("bolt file: %v", err)
	}

	second := startRun(t, cfg)
	if got := second.revision(ctx, t, "registered_tool"); got.GetRevision() != reg.GetTool().GetRevision() {
		t.Errorf("registered_tool after restart at revision %d, want %d (kept by the bolt file)", got.GetRevision(), reg.GetTool().GetRevision())
	}
	if got := second.revision(ctx, t, "file_tool"); got.GetRevision() != fileBefore.GetRevision() {
		t.Errorf("file_tool re-seeded at revision %d, want %d unchanged (same definition)", got.GetRevision(), fileBefore.GetRevision())
	}
	// The demo backend listens on a new port each run: the seed overwrites
	// the stored demo tools and calls reach the new backend.
	noteAfter := second.revision(ctx, t, "create_note")
	switch {
	case noteAfter.GetBackend() == noteBefore.GetBackend():
		// The OS handed out the same port again: nothing changed, so the
		// revision must not move either.
		if noteAfter.GetRevision() != noteBefore.GetRevision() {
			t.Errorf("create_note unchanged but re-seeded at revision %d, want %d", noteAfter.GetRevision(), noteBefore.GetRevision())
		}
	case noteAfter.GetRevision() <= noteBefore.GetRevision():
		t.Errorf("create_note moved to backend %s at revision %d; want a revision after %d",
			noteAfter.GetBackend(), noteAfter.GetRevision(), noteBefore.GetRevision())
	}
	if _, err := second.gw.InvokeTool(ctx, note); err != nil {
		t.Errorf("create_note after restart: %v; want it served by the new demo backend", err)
	}
}
