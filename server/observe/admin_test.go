package observe

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/httplimits"
)

// TestAdmin: over a real loopback listener, /healthz answers while the
// gateway is not ready, /readyz answers 503 with the reason and 200 with
// the about lines once ready, and /metrics exports the pending changes
// read at scrape time, by upstream.
func TestAdmin(t *testing.T) {
	t.Parallel()
	var notReady atomic.Pointer[error]
	waiting := errors.New("waiting for the registry store")
	notReady.Store(&waiting)
	m := NewMetrics()
	pending := map[string]int{"http://127.0.0.1:9/mcp": 2}
	var scrapes atomic.Int32
	m.WatchPendingChanges(func() map[string]int { scrapes.Add(1); return pending })
	a := NewAdmin(m, func() error {
		if e := notReady.Load(); e != nil {
			return *e
		}
		return nil
	}, func() string { return "policy_sha256 abc\n" })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(lis, httplimits.Defaults()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Close(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve after Close: %v, want nil", err)
		}
	})
	base := "http://" + lis.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}

	cases := []struct {
		name, reason, path string
		ready              bool
		wantCode           int
		wantBody           []string
	}{
		{name: "healthz while waiting", reason: "liveness holds while the store is waited for", path: "/healthz", wantCode: 200, wantBody: []string{"ok"}},
		{name: "readyz while waiting", reason: "not ready: 503 naming why", path: "/readyz", wantCode: 503, wantBody: []string{"not ready: waiting for the registry store"}},
		{name: "readyz ready", reason: "ready: 200 with the version and the about lines", path: "/readyz", ready: true, wantCode: 200,
			wantBody: []string{"ready\n", "version ", "policy_sha256 abc"}},
		{name: "metrics", reason: "the pending changes are read at scrape time, by upstream", path: "/metrics", ready: true, wantCode: 200,
			wantBody: []string{`flowdrop_mcp_pending_changes{upstream="http://127.0.0.1:9/mcp"} 2`}},
	}
	for _, tc := range cases { // in order: readiness changes between rows
		if tc.ready {
			notReady.Store(nil)
		}
		code, body := get(tc.path)
		if code != tc.wantCode {
			t.Errorf("%s: %s answered %d, want %d (%s)", tc.name, tc.path, code, tc.wantCode, tc.reason)
		}
		for _, w := range tc.wantBody {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s body %q lacks %q (%s)", tc.name, tc.path, body, w, tc.reason)
			}
		}
	}
	if scrapes.Load() == 0 {
		t.Error("the pending-changes count was never read")
	}
}
