package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingReader counts what is read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestResponseLimitIsSharedAndStopsReading: the responses of one limited
// context share its budget; crossing it fails the read, cancels the
// context with ErrResponseTooLarge, and reads at most one byte past the
// budget from the upstream; requests without the limit are not held to it.
func TestResponseLimitIsSharedAndStopsReading(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		io.WriteString(w, strings.Repeat("b", n))
	}))
	defer srv.Close()
	client := HTTPClient(srv.URL, Header{}, nil)
	// POSTs: a call's requests (a GET without Last-Event-ID is a
	// session's standing stream, TestStandingStreamOutlivesTheBudget).
	get := func(ctx context.Context, n int) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/?n=%d", srv.URL, n), nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return len(body), err
	}

	ctx, stop := WithResponseLimit(context.Background(), 1000)
	defer stop()
	if n, err := get(ctx, 600); n != 600 || err != nil {
		t.Fatalf("first response: %d bytes, %v; want all 600 (within the budget)", n, err)
	}
	if _, err := get(ctx, 600); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("second response: %v; want ErrResponseTooLarge (600+600 is over the shared budget of 1000)", err)
	}
	if !errors.Is(context.Cause(ctx), ErrResponseTooLarge) {
		t.Errorf("cause %v; want the context cancelled with ErrResponseTooLarge", context.Cause(ctx))
	}
	if n, err := get(context.Background(), 5000); n != 5000 || err != nil {
		t.Errorf("unlimited request: %d bytes, %v; want all 5000", n, err)
	}

	// Straight on a body: the reads stop one byte past the budget.
	ctx, stop = WithResponseLimit(context.Background(), 100)
	defer stop()
	src := &countingReader{r: strings.NewReader(strings.Repeat("c", 1<<20))}
	body := &cappedBody{ReadCloser: io.NopCloser(src), l: ctx.Value(responseLimitKey{}).(*responseLimit)}
	if _, err := io.ReadAll(body); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("ReadAll: %v; want ErrResponseTooLarge", err)
	}
	if src.n != 101 {
		t.Errorf("read %d bytes of the upstream's body; want 101 (the budget and one byte to know it was crossed)", src.n)
	}
	if _, err := body.Read(make([]byte, 10)); !errors.Is(err, ErrResponseTooLarge) || src.n != 101 {
		t.Errorf("a read after crossing: %v, %d read; want ErrResponseTooLarge and nothing more read", err, src.n)
	}
}

// TestStandingStreamOutlivesTheBudget: a session made under a call's
// response limit (the pool makes one on a call's context) keeps its
// standing stream when that stream carries more than the budget — the
// notifications after it are not the call's response — and a resumed
// call's stream (Last-Event-ID) is still held to it.
func TestStandingStreamOutlivesTheBudget(t *testing.T) {
	const budget = 2 << 10
	uri := "test://" + strings.Repeat("r", 200)
	server := mcp.NewServer(&mcp.Implementation{Name: "notifier", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	server.AddResource(&mcp.Resource{URI: uri, Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	var updates atomic.Int64
	ctx, stop := WithResponseLimit(context.Background(), budget)
	c, err := ConnectCaller(ctx, srv.URL, Header{}, ConnectOptions{Transport: TransportStreamable, Listen: true, MaxResponseBytes: budget,
		ClientNotificationsOnly: true, Client: &mcp.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
			updates.Add(1)
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Session.Close()
	if err := c.Session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	stop() // the call that made the session is over

	const sent = 40 // about 10 KiB of notifications: five budgets
	for range sent {
		if err := server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); updates.Load() < sent && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := updates.Load(); n != sent {
		t.Fatalf("%d of %d notifications arrived on the standing stream", n, sent)
	}
	if _, err := c.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err != nil {
		t.Fatalf("the session after its standing stream carried %d bytes and more: %v", budget, err)
	}

	for _, tc := range []struct {
		reason, method, lastEventID string
		limited                     bool
	}{
		{"a standing stream", http.MethodGet, "", false},
		{"a call's stream resumed", http.MethodGet, "7", true},
		{"a call", http.MethodPost, "", true},
	} {
		req := httptest.NewRequest(tc.method, "/", nil)
		if tc.lastEventID != "" {
			req.Header.Set("Last-Event-ID", tc.lastEventID)
		}
		if got := !standingStream(req); got != tc.limited {
			t.Errorf("%s: held to the call's budget %v, want %v", tc.reason, got, tc.limited)
		}
	}
}
