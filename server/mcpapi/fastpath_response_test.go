package mcpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAppendResultMessageMatchesSDK: the response the fast path writes in
// one pass is byte for byte the SDK's (jsonrpc.EncodeMessage around the
// result encodeResult writes), or it declines and leaves the buffer as it
// was.
func TestAppendResultMessageMatchesSDK(t *testing.T) {
	text := &callResult{Content: []mcp.Content{&mcp.TextContent{Text: "a <b> & \"c\"\n\u2028 é \x01"}}, ResultType: "complete"}
	structured := &callResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"k":"<v>"}`}},
		StructuredContent: json.RawMessage(`{"k":"<v>","n":[1,2.5e3]}`), IsError: true,
		ResultBase: mcp.ResultBase{Meta: mcp.Meta{"flowdrop/repairs": []map[string]any{{"path": "/a&b", "kind": "x"}}, mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "g<w>", Version: "1"}}}}
	empty := &callResult{Content: []mcp.Content{}}
	for _, tc := range []struct {
		id      any
		res     mcp.Result
		written bool
		reason  string
	}{
		{float64(7), text, true, "a number id (as the JSON-RPC decoding makes it); HTML and U+2028 in the text"},
		{float64(-9007199254740991), empty, true, "a negative number id; an empty content list"},
		{"req-1 <&>", structured, true, "a string id needing no escapes; structured content, _meta and isError"},
		{"a\"b", text, false, "a quote in the id: the SDK's encoder writes it"},
		{"tab\there", text, false, "a control character in the id"},
		{"é", text, false, "non-ASCII in the id"},
		{"x", nil, false, "no result: the SDK's encoding of null"},
	} {
		id := mustID(t, tc.id)
		var b bytes.Buffer
		b.WriteString("prefix")
		if got := appendResultMessage(&b, id, tc.res); got != tc.written {
			t.Errorf("%v: appendResultMessage = %v, want %v (%s)", tc.id, got, tc.written, tc.reason)
			continue
		}
		if !tc.written {
			if b.String() != "prefix" {
				t.Errorf("%v: declined but left %q (%s)", tc.id, b.String(), tc.reason)
			}
			continue
		}
		raw, err := encodeResult(tc.res)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimPrefix(b.String(), "prefix"); got != string(want) {
			t.Errorf("%v: wrote\n%s\nthe SDK writes\n%s\n(%s)", tc.id, got, want, tc.reason)
		}
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1) // before the bytes can reach the client
	return c.Conn.Write(p)
}

// TestFastResponseOneWrite: over HTTP/1.1 the fast path's answer — the
// response's head, the event and the stream's end — leaves in one write
// to the connection, chunked as the SDK's stream is; a flush after the
// event cost a second write for the stream's end.
func TestFastResponseOneWrite(t *testing.T) {
	m := &Server{log: slog.New(slog.DiscardHandler), impl: &mcp.Implementation{Name: "g", Version: "1"}}
	res := &callResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 900)}}}
	fc := &fastCall{id: mustID(t, float64(1))}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: lis}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.writeFastResponse(w, r, fc, res, nil, false)
	})}
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })

	resp, err := http.Post("http://"+lis.Addr().String()+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	want.WriteString(sseEventPrefix)
	data, _ := m.encodeFastResponse(fc, res, nil)
	want.Write(data)
	want.WriteString(sseEventSuffix)
	if string(body) != want.String() {
		t.Errorf("body %q, want %q", body, want.String())
	}
	if te := resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
		t.Errorf("framing %q, want chunked as the SDK's stream", te)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if n := cl.writes.Load(); n != 1 {
		t.Errorf("the answer took %d writes to the connection, want 1", n)
	}
}
