package server_test

// The MCP face's HTTP layer over real TCP on 127.0.0.1: what a request must
// be (one JSON value, valid text) and how long and how many connections a
// client may hold.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// rpcReply is a JSON-RPC response as the MCP endpoint sends it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpPost POSTs body to the MCP endpoint as a client would and returns the
// HTTP status, the raw body, and the JSON-RPC reply (from a JSON body or
// the first SSE data line) when there is one.
func mcpPost(t *testing.T, url string, header http.Header, body []byte) (int, string, *rpcReply) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(text) {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				text = d
				break
			}
		}
	}
	var r rpcReply
	if json.Unmarshal([]byte(text), &r) != nil {
		return resp.StatusCode, string(raw), nil
	}
	return resp.StatusCode, string(raw), &r
}

// toolsCall is a tools/call request with arguments written as given.
func toolsCall(tool, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

// rawBytesCodec sends and receives messages as the bytes given: the test
// builds InvokeToolRequests no protobuf library would marshal.
type rawBytesCodec struct{}

func (rawBytesCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawBytesCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawBytesCodec) Name() string { return "proto" }

// invokeWithStringArg is InvokeToolRequest{tool, arguments: {key: value}}
// encoded by hand, so value may be any bytes.
func invokeWithStringArg(tool, key string, value []byte) []byte {
	val := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), value) // Value.string_value
	entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
	entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), val)
	args := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry) // Struct.fields
	req := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), tool)
	return protowire.AppendBytes(protowire.AppendTag(req, 2, protowire.BytesType), args)
}

// TestInvalidTextIsRefusedOnBothFaces: a string that is not valid UTF-8, a
// \u escape of an unpaired surrogate, or an object key given twice is
// refused on MCP (invalid params naming the argument's path, as for other
// malformed arguments) instead of being replaced by U+FFFD or resolved by
// keeping one, as gRPC refuses invalid UTF-8; the backend is never called.
func TestInvalidTextIsRefusedOnBothFaces(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())

	cases := []struct {
		name, reason, args string
		wantIn             string // in the JSON-RPC error; "" = the call is served
	}{
		{name: "invalid-utf8-value", reason: "a 0xff byte in a value would become U+FFFD", args: "{\"title\":\"bad \xff byte\"}", wantIn: "/title is not valid UTF-8"},
		{name: "lone-high-surrogate", reason: `\ud800 alone is no character`, args: `{"title":"x\ud800y"}`, wantIn: `/title holds \ud800`},
		{name: "lone-low-surrogate-nested", reason: "the path reaches into lists", args: `{"title":"t","tags":["a","\udc00"]}`, wantIn: "/tags/1 holds"},
		{name: "high-then-non-surrogate", reason: "a high surrogate followed by another escape is still unpaired", args: `{"title":"\ud800\u0041"}`, wantIn: "/title holds"},
		{name: "invalid-utf8-key", reason: "keys are text too", args: "{\"title\":\"t\",\"k\xc3\":\"v\"}", wantIn: "key at (root) is not valid UTF-8"},
		{name: "duplicate-key", reason: "which title was meant? encoding/json would keep the last, another reader the first",
			args: `{"title":"shown","title":"sent"}`, wantIn: "key at /title appears more than once"},
		{name: "duplicate-key-escaped", reason: "keys compare decoded", args: `{"title":"t","tags":["a"],"t\u0061gs":["b"]}`,
			wantIn: "key at /tags appears more than once"},
		{name: "valid-pair", reason: "a surrogate pair is one character: served", args: `{"title":"smile \ud83d\ude00"}`},
		{name: "plain", reason: "the control: ordinary text is served", args: `{"title":"caf\u00e9 ok"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			code, raw, r := mcpPost(t, env.MCPURL, nil, toolsCall("create_note", tc.args))
			if code != http.StatusOK || r == nil {
				t.Fatalf("HTTP %d %q, want a JSON-RPC reply (%s)", code, raw, tc.reason)
			}
			calls := len(env.Backend.CallsFor("create_note")) - before
			if tc.wantIn == "" {
				if r.Error != nil || r.Result == nil || r.Result.IsError || calls != 1 {
					t.Fatalf("reply %s, %d backend calls, want served (%s)", raw, calls, tc.reason)
				}
				return
			}
			if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(r.Error.Message, tc.wantIn) {
				t.Errorf("reply %s, want invalid params (%d) containing %q (%s)", raw, jsonrpc.CodeInvalidParams, tc.wantIn, tc.reason)
			}
			if calls != 0 {
				t.Errorf("the backend was called %d times (%s)", calls, tc.reason)
			}
		})
	}
	t.Run("lone-surrogate/mcp-sdk-client", func(t *testing.T) {
		// reason: the SDK's own client sends the escape as written; the refusal reaches it as a JSON-RPC error.
		ctx := testCtx(t)
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(`{"title":"\ud800"}`)})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "/title") {
			t.Fatalf("tools/call: %v, want invalid params naming /title", err)
		}
	})
	t.Run("invalid-utf8-value/grpc", func(t *testing.T) {
		// reason: the same bytes over gRPC are refused too, before the backend.
		before := len(env.Backend.CallsFor("create_note"))
		req, resp := invokeWithStringArg("create_note", "title", []byte("bad \xff byte")), []byte(nil)
		err := env.Conn.Invoke(testCtx(t), "/flowdrop.gateway.v1.ToolGatewayService/InvokeTool", &req, &resp, grpc.ForceCodec(rawBytesCodec{}))
		if status.Code(err) == codes.OK {
			t.Fatalf("InvokeTool with invalid UTF-8 succeeded")
		}
		if n := len(env.Backend.CallsFor("create_note")) - before; n != 0 {
			t.Errorf("the backend was called %d times", n)
		}
	})
}

// TestMCPRefusesTrailingBytes: a POST body must be exactly one JSON value;
// the SDK's decoder would act on the first and ignore the rest.
func TestMCPRefusesTrailingBytes(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP())
	call := toolsCall("create_note", `{"title":"t"}`)
	for _, tc := range []struct {
		name, reason, trailer string
		wantStatus            int
	}{
		{name: "second-message", reason: "a second JSON-RPC object after the first", trailer: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, wantStatus: http.StatusBadRequest},
		{name: "garbage", reason: "bytes that are not JSON at all", trailer: "xyz", wantStatus: http.StatusBadRequest},
		{name: "whitespace", reason: "JSON whitespace after the value is allowed", trailer: " \r\n\t", wantStatus: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			code, raw, reply := mcpPost(t, env.MCPURL, nil, append(append([]byte(nil), call...), tc.trailer...))
			if code != tc.wantStatus {
				t.Fatalf("HTTP %d %q, want %d (%s)", code, raw, tc.wantStatus, tc.reason)
			}
			calls := len(env.Backend.CallsFor("create_note")) - before
			if tc.wantStatus != http.StatusOK {
				if !strings.Contains(raw, "data after the JSON-RPC message") || calls != 0 {
					t.Errorf("body %q, %d backend calls: want the refusal to say why, and no call (%s)", raw, calls, tc.reason)
				}
				if reply == nil || reply.Error == nil || reply.Error.Code != -32700 || string(reply.ID) != "null" {
					t.Errorf("body %q: want a JSON-RPC parse error (-32700, id null) (%s)", raw, tc.reason)
				}
			} else if calls != 1 {
				t.Errorf("%d backend calls, want 1 (%s)", calls, tc.reason)
			}
		})
	}
}

// slowMCPEnv is an authenticated MCP gateway with a short body read
// timeout and a cap of two connections.
func slowMCPEnv(t *testing.T, maxConns int) *gatewaytest.Env {
	return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
			{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}}}}
		c.MCP.HTTP.ReadTimeout = 300 * time.Millisecond
		c.MCP.HTTP.MaxConnections = maxConns
	}))
}

// rawConn dials the MCP endpoint and writes a POST's head announcing a
// body of length bytes, then the first bytes of it.
func rawConn(t *testing.T, mcpURL string, header string, length int, first string) net.Conn {
	t.Helper()
	u, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
		u.Path, u.Host, header, length, first)
	return c
}

// answerThenClose reads c's response (within a generous bound) and reports
// its status code and whether the server then closed the connection.
func answerThenClose(t *testing.T, c net.Conn) (int, bool) {
	t.Helper()
	return answer(t, c, true)
}

// answer reads c's response; with waitClose, also whether the server then
// closed the connection.
func answer(t *testing.T, c net.Conn, waitClose bool) (int, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !waitClose {
		return resp.StatusCode, false
	}
	_, err = br.ReadByte()
	return resp.StatusCode, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestMCPSlowClients: a client sending its body slowly holds a connection
// for a bounded time only — without credentials it is answered 401 and the
// connection closed after a small peek of the body, with credentials it is
// cut off by the read timeout — and connections over the cap wait while
// the gateway keeps serving.
func TestMCPSlowClients(t *testing.T) {
	t.Parallel()
	env := slowMCPEnv(t, 0)
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"`

	t.Run("unauthenticated-stalled-body", func(t *testing.T) {
		// reason: a 1 MiB body of which only the head arrives: the 401 must not wait for the rest.
		c := rawConn(t, env.MCPURL, "", 1<<20, head)
		code, closed := answerThenClose(t, c)
		if code != http.StatusUnauthorized || !closed {
			t.Fatalf("status %d, closed %v: want 401 and the connection closed", code, closed)
		}
	})
	t.Run("unauthenticated-large-body", func(t *testing.T) {
		// reason: a large body sent in full is not drained for a 401: the server closes before the client finishes sending
		// (a property, not a regression row: net/http closes past 256 KiB unread on its own).
		c := rawConn(t, env.MCPURL, "", 64<<20, head)
		chunk := []byte(strings.Repeat("x", 64<<10))
		sent, werr := 0, error(nil)
		for sent < 64<<20 && werr == nil { // bounded: 1024 chunks
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			var n int
			n, werr = c.Write(chunk)
			sent += n
		}
		if werr == nil || errors.Is(werr, os.ErrDeadlineExceeded) {
			t.Fatalf("the client sent all %d bytes (write error %v): the server read the whole body of a refused request", sent, werr)
		}
	})
	t.Run("authenticated-stalled-body", func(t *testing.T) {
		// reason: with credentials, the body must still arrive within the read timeout (300ms here).
		c := rawConn(t, env.MCPURL, "X-Api-Key: agent-key\r\n", 1000, head)
		code, closed := answerThenClose(t, c)
		if code != http.StatusRequestTimeout || !closed {
			t.Fatalf("status %d, closed %v: want 408 and the connection closed", code, closed)
		}
	})
	t.Run("authenticated-complete-body", func(t *testing.T) {
		// reason: the control: a body sent at once is served.
		body := head + `t"}}}`
		c := rawConn(t, env.MCPURL, "X-Api-Key: agent-key\r\n", len(body), body)
		if code, _ := answer(t, c, false); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
	})
}

// TestMCPConnectionCap: with max_connections 2, two idle connections fill
// the endpoint; a third waits (it is not answered) until one closes, while
// gRPC keeps serving.
func TestMCPConnectionCap(t *testing.T) {
	t.Parallel()
	env := slowMCPEnv(t, 2)
	u, _ := url.Parse(env.MCPURL)
	var holders []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		holders = append(holders, c)
	}
	// The third sends a whole request (refused 401 at once when served).
	third := rawConn(t, env.MCPURL, "", 2, "{}")
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := third.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the third connection was served over the cap (read %d, %v)", n, err)
	}
	ctx, cancel := context.WithTimeout(withKey("agent-key"), 5*time.Second)
	defer cancel()
	if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note",
		Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}); err != nil {
		t.Fatalf("gRPC while MCP is at its cap: %v", err)
	}
	holders[0].Close()
	if code, _ := answer(t, third, false); code != http.StatusUnauthorized {
		t.Fatalf("the waiting connection got %d once a slot freed, want 401", code)
	}
}

// TestMCPTimeoutsSpareSlowCallsAndStreams: the read and write timeouts are
// per request and per write, not per connection age: a tool call that
// takes longer than both (1s against 200ms) is answered, and a
// subscriptions/listen stream open all that time still delivers
// list_changed afterwards.
func TestMCPTimeoutsSpareSlowCallsAndStreams(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(),
		timedTool("slow_tool", 5*time.Second), gatewaytest.WithBackendHandler("slow_tool", slowBackend),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.MCP.HTTP.ReadTimeout, c.MCP.HTTP.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
		}))
	ctx := testCtx(t)
	changed := make(chan struct{}, 4)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{onChange: func() { changed <- struct{}{} }})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_tool", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "done" {
		t.Fatalf("a call slower than the timeouts: %v %+v, want its result", err, res)
	}
	if _, err := env.Registry.Register(ctx, gatewaytest.ObjectTool("fresh_tool")(env.BackendAddr), registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no list_changed: the listen stream did not survive the write timeout")
	}
}
