package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	get := func(ctx context.Context, n int) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/?n=%d", srv.URL, n), nil)
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
