package mcpupstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// differentialUpstream is a go-sdk server whose tools answer with every
// part of a tools/call result; it records each tools/call request's params
// and MCP headers.
type differentialUpstream struct {
	URL string
	mu  sync.Mutex
	got []recordedCall
	// blocked hears "block" start; unblocked hears its context end.
	blocked, unblocked chan struct{}
}

type recordedCall struct {
	params  map[string]any
	headers http.Header
}

func (u *differentialUpstream) last(t *testing.T) recordedCall {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("the upstream saw no tools/call")
	}
	return u.got[len(u.got)-1]
}

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum  int    `json:"sum"`
	Note string `json:"note"`
}

func startDifferentialUpstream(t *testing.T, jsonResponse, stateless bool) *differentialUpstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "differential", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "sum"}, func(_ context.Context, _ *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B, Note: "ünïcode ✓ \"quoted\" <html>"}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fails"}, func(context.Context, *mcp.CallToolRequest, sumIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("the tool failed")
	})
	size := int64(42)
	blocks := &mcp.CallToolResult{
		Meta:    mcp.Meta{"trace": "abc", "n": 1.5, "nested": map[string]any{"k": []any{"v", 2.0, nil, true}}},
		IsError: true,
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello", Meta: mcp.Meta{"m": "t"}, Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
			&mcp.TextContent{Text: ""},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF....WAVE"), Meta: mcp.Meta{"len": 3.0}},
			&mcp.ResourceLink{URI: "file:///a.txt", Name: "a", Title: "A", Description: "the a", MIMEType: "text/plain", Size: &size,
				Icons: []mcp.Icon{{Source: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"16x16"}}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "inline"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
		},
		StructuredContent: map[string]any{"list": []any{1.0, "two", map[string]any{}}, "empty": "", "big": 1e300},
	}
	s.AddTool(&mcp.Tool{Name: "blocks", InputSchema: &jsonSchemaObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return blocks, nil
	})
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: &jsonSchemaObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 64<<10)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: &jsonSchemaObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Notifications and requests of the upstream's on the call's stream.
		for i := range 3 {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "p", Progress: float64(i), Message: "step"})
		}
		note := "no requests"
		if !jsonResponse && !stateless {
			pingErr := req.Session.Ping(ctx, nil)
			//lint:ignore SA1019 an upstream may still ask; the answer must be the SDK's
			roots, rootsErr := req.Session.ListRoots(ctx, nil)
			n := -1
			if roots != nil {
				n = len(roots.Roots)
			}
			note = fmt.Sprintf("ping: %v; roots: %d %v", pingErr, n, rootsErr)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: note}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "progress", InputSchema: &jsonSchemaObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Progress for another token first: not this call's.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "other", Progress: 9})
		if token := req.Params.GetProgressToken(); token != nil {
			for i := 1; i <= 3; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	u := &differentialUpstream{blocked: make(chan struct{}, 1), unblocked: make(chan struct{}, 1)}
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: &jsonSchemaObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.blocked <- struct{}{}
		select {
		case <-ctx.Done():
			u.unblocked <- struct{}{}
		case <-time.After(2 * time.Second): // the server must be able to close
		}
		return &mcp.CallToolResult{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse, Stateless: stateless})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string         `json:"method"`
				Params map[string]any `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				u.mu.Lock()
				u.got = append(u.got, recordedCall{params: msg.Params, headers: r.Header.Clone()})
				u.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

var jsonSchemaObject = json.RawMessage(`{"type":"object"}`)

// exported is a result's exported fields (the SDK's result also holds an
// unexported resultType no caller reads).
func exported(r *mcp.CallToolResult) *mcp.CallToolResult {
	if r == nil {
		return nil
	}
	return &mcp.CallToolResult{Meta: r.Meta, Content: r.Content, StructuredContent: r.StructuredContent,
		IsError: r.IsError, InputRequests: r.InputRequests, RequestState: r.RequestState}
}

// TestCallerMatchesSDK: the same calls on the same upstream through the
// go-sdk's CallTool and through Caller.CallTool send the same params and
// MCP headers, and come back deep-equal — structured content, isError,
// _meta, every content block kind, an error result, JSON-RPC errors
// (-32602), notifications and requests of the upstream's interleaved on
// the answer's stream, an answer over the response budget refused — with
// the upstream answering with event streams and with JSON bodies.
func TestCallerMatchesSDK(t *testing.T) {
	for _, mode := range []struct {
		name                    string
		jsonResponse, stateless bool
		revision                string // the revision the sessions speak
	}{
		{"event stream", false, false, "2025-11-25"},
		{"json", true, false, "2025-11-25"},
		{"stateless event stream", false, true, "2026-07-28"},
		{"stateless json", true, true, "2026-07-28"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			up := startDifferentialUpstream(t, mode.jsonResponse, mode.stateless)
			ctx := context.Background()
			for _, tc := range []struct {
				name, tool, args string
				limit            int64 // the response budget (0: none)
			}{
				{name: "structured content and its text", tool: "sum", args: `{"a":2,"b":40}`},
				{name: "every content block kind, _meta, isError", tool: "blocks", args: `{"x":[1,{"y":null}]}`},
				{name: "a tool's error is an error result", tool: "fails", args: `{"a":1,"b":2}`},
				{name: "arguments the schema refuses", tool: "sum", args: `{"a":"two"}`},
				{name: "an unknown tool (-32602)", tool: "nope", args: `{}`},
				{name: "a tool name with a space and non-ASCII", tool: "say hello ✓", args: `{}`},
				{name: "notifications and requests on the stream", tool: "chatty", args: `{}`},
				{name: "empty arguments", tool: "sum", args: ``},
				{name: "an answer over the budget", tool: "big", args: `{}`, limit: 4 << 10},
				{name: "an answer within the budget", tool: "big", args: `{}`, limit: 1 << 20},
			} {
				t.Run(tc.name, func(t *testing.T) {
					sdk, err := mcpupstream.Connect(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{MaxResponseBytes: 1 << 20})
					if err != nil {
						t.Fatal(err)
					}
					defer sdk.Close()
					fast, err := mcpupstream.ConnectCaller(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{MaxResponseBytes: 1 << 20})
					if err != nil {
						t.Fatal(err)
					}
					defer fast.Close()
					if f, s := fast.Session.InitializeResult().ProtocolVersion, sdk.InitializeResult().ProtocolVersion; f != mode.revision || s != mode.revision {
						t.Fatalf("revisions: fast %s, sdk %s, want %s", f, s, mode.revision)
					}

					call := func(f func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, recordedCall, error, error) {
						cctx := ctx
						if tc.limit > 0 {
							var stop context.CancelFunc
							cctx, stop = mcpupstream.WithResponseLimit(ctx, tc.limit)
							defer stop()
						}
						res, err := f(cctx)
						return res, up.last(t), context.Cause(cctx), err
					}
					var args json.RawMessage
					if tc.args != "" {
						args = json.RawMessage(tc.args)
					}
					want, wantReq, wantCause, wantErr := call(func(ctx context.Context) (*mcp.CallToolResult, error) {
						p := &mcp.CallToolParams{Name: tc.tool}
						if args != nil {
							p.Arguments = args
						}
						return sdk.CallTool(ctx, p)
					})
					got, gotReq, gotCause, gotErr := call(func(ctx context.Context) (*mcp.CallToolResult, error) {
						return fast.CallTool(ctx, tc.tool, args)
					})

					if !reflect.DeepEqual(gotReq.params, wantReq.params) {
						t.Errorf("params sent:\n fast %v\n sdk  %v", gotReq.params, wantReq.params)
					}
					for _, h := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Authorization"} {
						if g, w := gotReq.headers.Values(h), wantReq.headers.Values(h); !reflect.DeepEqual(g, w) {
							t.Errorf("header %s: fast %q, sdk %q", h, g, w)
						}
					}
					if (gotReq.headers.Get("Mcp-Session-Id") == "") != (wantReq.headers.Get("Mcp-Session-Id") == "") {
						t.Errorf("Mcp-Session-Id: fast %q, sdk %q", gotReq.headers.Get("Mcp-Session-Id"), wantReq.headers.Get("Mcp-Session-Id"))
					}
					if !errors.Is(gotCause, wantCause) && !(gotCause == nil && wantCause == nil) {
						t.Errorf("cause: fast %v, sdk %v", gotCause, wantCause)
					}
					if (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("error: fast %v, sdk %v", gotErr, wantErr)
					}
					if wantErr != nil {
						var g, w *jsonrpc.Error
						if errors.As(gotErr, &g) != errors.As(wantErr, &w) || (w != nil && (g.Code != w.Code || g.Message != w.Message || !bytes.Equal(g.Data, w.Data))) {
							t.Errorf("JSON-RPC error: fast %v, sdk %v", gotErr, wantErr)
						}
						if tc.limit > 0 && !errors.Is(gotCause, mcpupstream.ErrResponseTooLarge) {
							t.Errorf("over the budget: cause %v, want ErrResponseTooLarge", gotCause)
						}
						return
					}
					if !reflect.DeepEqual(exported(got), exported(want)) {
						g, _ := json.Marshal(got)
						w, _ := json.Marshal(want)
						t.Errorf("result:\n fast %s\n sdk  %s", g, w)
					}
				})
			}
		})
	}
}

// TestCallerCancel: cancelling a call ends it at once with the context's
// error, and the upstream's tool sees its own context end (the request is
// aborted and the upstream told), as with the SDK's CallTool.
func TestCallerCancel(t *testing.T) {
	for _, mode := range []struct {
		name                    string
		jsonResponse, stateless bool
	}{{"event stream", false, false}, {"json", true, false}, {"stateless", false, true}} {
		// A stateless go-sdk server does not end a tool's context when
		// its call is cancelled, whoever the client (the SDK's CallTool
		// included): there, only the call's own end is checked.
		t.Run(mode.name, func(t *testing.T) {
			up := startDifferentialUpstream(t, mode.jsonResponse, mode.stateless)
			c, err := mcpupstream.ConnectCaller(context.Background(), up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-up.blocked
				cancel()
			}()
			start := time.Now()
			_, err = c.CallTool(ctx, "block", json.RawMessage(`{}`))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled call: %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the cancelled call took %v to end", d)
			}
			if mode.stateless {
				return
			}
			select {
			case <-up.unblocked:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream's tool never saw the call cancelled")
			}
		})
	}
}

// TestCallerProgress: CallToolProgress asks the upstream for progress with
// a token of its own, beside the _meta the revision requires, and reports
// exactly the notifications for that token read on the answer's stream (a
// JSON answer carries none); CallTool sends no token.
func TestCallerProgress(t *testing.T) {
	for _, mode := range []struct {
		name                    string
		jsonResponse, stateless bool
		want                    int
	}{
		{"event stream", false, false, 3},
		{"json", true, false, 0},
		{"stateless event stream", false, true, 3},
		{"stateless json", true, true, 0},
	} {
		t.Run(mode.name, func(t *testing.T) {
			up := startDifferentialUpstream(t, mode.jsonResponse, mode.stateless)
			ctx := context.Background()
			c, err := mcpupstream.ConnectCaller(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{MaxResponseBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			if _, err := c.CallTool(ctx, "progress", nil); err != nil {
				t.Fatal(err)
			}
			plain := up.last(t).params
			if meta, _ := plain["_meta"].(map[string]any); meta["progressToken"] != nil {
				t.Errorf("CallTool sent progress token %v", meta["progressToken"])
			}

			var got []mcpupstream.Progress
			res, err := c.CallToolProgress(ctx, "progress", nil, func(p mcpupstream.Progress) { got = append(got, p) })
			if err != nil || len(res.Content) != 1 {
				t.Fatalf("call: %v %+v", err, res)
			}
			sent := up.last(t).params
			meta, _ := sent["_meta"].(map[string]any)
			if tok, _ := meta["progressToken"].(string); !strings.HasPrefix(tok, "flowdrop-") {
				t.Errorf("progress token sent %v, want the call's own", meta["progressToken"])
			}
			plainMeta, _ := plain["_meta"].(map[string]any)
			for k, v := range plainMeta { // the revision's _meta, kept beside the token
				if !reflect.DeepEqual(meta[k], v) {
					t.Errorf("_meta[%q] = %v with progress, %v without", k, meta[k], v)
				}
			}
			if len(got) != mode.want {
				t.Fatalf("reported %d, want %d: %+v", len(got), mode.want, got)
			}
			for i, p := range got {
				if want := (mcpupstream.Progress{Progress: float64(i + 1), Total: 3, Message: fmt.Sprint("step ", i+1)}); p != want {
					t.Errorf("report %d = %+v, want %+v", i, p, want)
				}
			}
		})
	}
}
