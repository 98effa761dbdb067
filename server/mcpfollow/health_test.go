package mcpfollow

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
)

// TestHealthFollowsListings: an upstream tools are imported from is shown
// not listed before its first listing, listed after one, failing (with the
// error, its raw URL replaced by the label) once it stops answering — the
// last success kept beside it — and listed again when it answers; an
// upstream no tool comes from any more is not shown.
func TestHealthFollowsListings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := mcpupstreamtest.Start(t)
	r := startRegistry(t)
	imported := importTool(t, ctx, r, up.URL, "say hello", false)
	f := New(Config{Registry: r, Interval: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})

	one := func(when string) UpstreamHealth {
		t.Helper()
		h := f.Health()
		if len(h) != 1 || h[0].Upstream != upstreamLabel(up.URL) || len(h[0].Tools) != 1 || h[0].Tools[0] != imported.Name {
			t.Fatalf("%s: Health() = %+v, want the one upstream with %s", when, h, imported.Name)
		}
		return h[0]
	}
	if h := one("before any listing"); !h.Listed.IsZero() || h.LastError != "" {
		t.Errorf("before any listing: %+v, want neither listed nor failing", h)
	}

	f.sync(ctx)
	ok := one("after a listing")
	if ok.Listed.IsZero() || ok.LastError != "" {
		t.Fatalf("after a listing: %+v, want listed and not failing", ok)
	}

	up.Close()
	f.sync(ctx)
	failing := one("after the upstream stopped")
	if failing.LastError == "" || failing.LastErrorAt.Before(ok.Listed) || !failing.Listed.Equal(ok.Listed) {
		t.Fatalf("after the upstream stopped: %+v, want failing with the last success kept", failing)
	}

	// What the page shows of an error: the label, never user info or a
	// query (where credentials travel), and bounded.
	secret := "http://user:hunter2@127.0.0.1:9/mcp?token=s3cret"
	f.health.record(secret, time.Now(), errors.New(`Post "`+secret+`": refused`+strings.Repeat("x", 1000)), false)
	l := f.health.by[secret]
	if strings.Contains(l.lastErr, "hunter2") || strings.Contains(l.lastErr, "s3cret") || !strings.Contains(l.lastErr, "http://127.0.0.1:9/mcp") || len(l.lastErr) > maxHealthError+16 {
		t.Errorf("recorded error %q: want the label instead of the URL, bounded", l.lastErr)
	}
	f.health.record(secret, time.Now(), nil, false)
	if l.errAfterOK {
		t.Error("a success after a failure left the upstream failing")
	}

	if err := r.Delete(ctx, imported.Name, nil); err != nil {
		t.Fatal(err)
	}
	f.sync(ctx)
	if h := f.Health(); len(h) != 0 {
		t.Errorf("after its tool was deleted: Health() = %+v, want nothing", h)
	}
	if _, kept := f.health.by[up.URL]; kept {
		t.Error("the deleted upstream's listing is still kept")
	}
}
