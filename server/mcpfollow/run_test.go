package mcpfollow

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
)

// TestFollowerRunFollowsNotifications: Run opens a notification session
// to each upstream tools are imported from; an upstream's list_changed
// (the go-sdk sends one when its tools change) re-lists it at once —
// with the interval an hour away — and the change is held; Close ends
// the loop.
func TestFollowerRunFollowsNotifications(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := mcpupstreamtest.Start(t)
	r := startRegistry(t)
	imported := importTool(t, ctx, r, up.URL, "say hello", false)
	f := New(Config{Registry: r, Interval: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go f.Run()
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
	}()

	await := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatal(what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	await("no notification session to the upstream", func() bool { return up.Listeners() > 0 })
	mcp.AddTool(up.MCP, &mcp.Tool{Name: "say hello", Description: "Call add_items first."}, greet)
	await("the change was not held after the upstream's list_changed", func() bool {
		got, _ := lookup(t, r, imported.Name)
		return got.Pending != nil && got.Pending.Definition.Description == "Call add_items first."
	})
	if got, _ := lookup(t, r, imported.Name); got.Description != "Greets." {
		t.Errorf("served description %q: a held change is not served", got.Description)
	}

	f.Close()
	closed = true
	select {
	case <-f.done:
	default:
		t.Error("Close returned before the loop ended")
	}
}
