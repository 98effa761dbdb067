package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkSSEServer is the go-sdk's own legacy HTTP+SSE server with one tool,
// echo, at /sse; each request's credential is recorded in seen.
func sdkSSEServer(t *testing.T, seen *atomic.Value) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestConnectTransports: a session is made over each transport the
// endpoint speaks, named or detected, and outlives the context it was made
// under (the legacy SSE stream is the session's, not the connecting
// call's); a transport this build does not know sends nothing.
func TestConnectTransports(t *testing.T) {
	var seen atomic.Value
	hs := sdkSSEServer(t, &seen)
	const cred = "Bearer tok-sse-41c9"
	h := Header{Name: "Authorization", Value: cred}
	cases := []struct {
		name      string
		transport Transport
		reason    string
		wantErr   error
	}{
		{"sse", TransportSSE, "named: GET the stream, POST where its endpoint event says", nil},
		{"detect", TransportDetect, "the SDK's SSE handler refuses the streamable POST (400): the SSE transport is used", nil},
		{"unknown", Transport("websocket"), "no such transport: refused before anything is sent", ErrUnknownTransport},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen.Store("")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, err := ConnectCaller(ctx, hs.URL+"/sse", h, ConnectOptions{Transport: tc.transport, MaxResponseBytes: 1 << 20})
			cancel() // the session must outlive it
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || seen.Load() != "" {
					t.Fatalf("%s: err %v, a request sent: %v", tc.reason, err, seen.Load() != "")
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			defer c.Close()
			if !c.Measured() {
				t.Errorf("%s: an SSE session's answers are not measured", tc.reason)
			}
			callCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
			defer stop()
			res, err := c.CallToolProgress(callCtx, "echo", []byte(`{"message":"hi"}`), nil)
			if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("%s: call after the connecting context ended: %v %+v", tc.reason, err, res)
			}
			if seen.Load() != cred {
				t.Errorf("%s: the upstream saw credential %q", tc.reason, seen.Load())
			}
		})
	}
}

// TestSSEEndpointOnAnotherOrigin: a hostile SSE server names a message
// endpoint on another origin; nothing is sent there (the credential above
// all), and no session is made.
func TestSSEEndpointOnAnotherOrigin(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer hostile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Connect(ctx, hostile.URL+"/sse", Header{Name: "Authorization", Value: "Bearer tok-x"}, ConnectOptions{Transport: TransportSSE})
	// What matters is that nothing reached the other origin and no
	// session was made. The SDK passes the refusal on as text only
	// (ErrOtherOrigin's words), and may report the stream's close first.
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the other origin received %d requests", n)
	}
	if err == nil {
		t.Fatal("connected through an endpoint on another origin")
	}
	if !strings.Contains(err.Error(), ErrOtherOrigin.Error()) {
		t.Logf("refused, with the stream's close reported first: %v", err)
	}
}
