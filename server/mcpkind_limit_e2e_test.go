package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
)

// endlessHandler answers a tools/call for the tool "endless" with a
// response that never ends — one event-stream event, or one JSON body, of
// up to 64 MiB — and passes everything else to next. It stops writing when
// the reader goes away.
func endlessHandler(next http.Handler, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if !bytes.Contains(body, []byte(`"tools/call"`)) || !bytes.Contains(body, []byte(`"endless"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if contentType == "text/event-stream" {
			io.WriteString(w, "event: message\ndata: ")
		} else {
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`)
		}
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for range (64 << 20) / len(chunk) {
			if r.Context().Err() != nil {
				return
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
}

// TestMCPUpstreamResponseOverTheBackendReceiveLimit: an upstream MCP
// tool's response is held to the backend receive limit as a gRPC backend's
// is — ResourceExhausted naming the tool and the limit, nothing of the
// upstream — and the limit ends the call when it is crossed, also when the
// response would never end; the next call within it is answered, on a new
// session if the upstream's broke.
func TestMCPUpstreamResponseOverTheBackendReceiveLimit(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) { c.BackendMaxRecvMsgSize = limit }))
	upstream := mcp.NewServer(&mcp.Implementation{Name: "sized", Version: "1"}, nil)
	type sizeIn struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(upstream, &mcp.Tool{Name: "sized", Description: "Answers with that many bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("r", in.Bytes)}}}, nil, nil
		})
	mcp.AddTool(upstream, &mcp.Tool{Name: "endless", Description: "Never reached: the handler answers for it."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	t.Cleanup(func() { // after the upstream's HTTP servers: sessions whose clients never said goodbye
		var open []*mcp.ServerSession
		for ss := range upstream.Sessions() {
			open = append(open, ss)
		}
		for _, ss := range open {
			_ = ss.Close()
		}
	})

	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"bytes": map[string]any{"type": "integer"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, face := range []struct {
		name, contentType string
		json              bool
	}{
		{"event-stream", "text/event-stream", false},
		{"json", "application/json", true},
	} {
		sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, &mcp.StreamableHTTPOptions{JSONResponse: face.json})
		up := httptest.NewServer(endlessHandler(sdk, face.contentType))
		t.Cleanup(func() {
			// The gateway's follower holds a standing stream open.
			up.CloseClientConnections()
			up.Close()
		})
		for _, name := range []string{"sized", "endless"} {
			tool := &gatewayv1.Tool{Name: face.name + "." + name, InputSchema: schema,
				Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: up.URL, Tool: name}}}}
			if _, err := rc.RegisterTool(testCtx(t), &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
				t.Fatalf("register %s: %v", tool.GetName(), err)
			}
		}
		for _, tc := range []struct {
			tool   string
			bytes  int
			over   bool
			reason string
		}{
			{"sized", 1000, false, "well within the limit"},
			{"sized", 64 << 10, true, "four times the limit"},
			{"sized", 1000, false, "after an oversized response the upstream is still reachable"},
			{"endless", 0, true, "a response that never ends is cut off at the limit, not read up to the SDK's 16 MiB bound on an event"},
			{"sized", 2000, false, "after a cut-off response the upstream is still reachable"},
		} {
			tool := face.name + "." + tc.tool
			// Well under testCtx's bound: an oversized response must end
			// the call, not leave it to the deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, map[string]any{"bytes": tc.bytes})})
			cancel()
			if !tc.over {
				if err != nil || len(resp.GetResult().GetStringValue()) != tc.bytes {
					t.Errorf("%s %d bytes: %d bytes, %v; want the answer (%s)", tool, tc.bytes, len(resp.GetResult().GetStringValue()), err, tc.reason)
				}
				continue
			}
			if status.Code(err) != codes.ResourceExhausted {
				t.Errorf("%s %d bytes: %v; want ResourceExhausted (%s)", tool, tc.bytes, err, tc.reason)
				continue
			}
			msg := status.Convert(err).Message()
			for _, w := range []string{`tool "` + tool + `"`, "backend's response", "16384 bytes"} {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: message %q lacks %q", tool, msg, w)
				}
			}
			if strings.Contains(msg, up.URL) || strings.Contains(msg, strings.TrimPrefix(up.URL, "http://")) {
				t.Errorf("%s: message %q names the upstream", tool, msg)
			}
		}
	}
}
