package mcpupstream

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFuzzAnswer bounds an input: the parsers are linear, and long inputs
// only slow the fuzzer.
const maxFuzzAnswer = 16 << 10

// FuzzDecodeAnswer feeds an upstream's answer to Caller's parsers. As a
// JSON-RPC message it must decode exactly as the go-sdk decodes it: the
// same messages refused, the same id, error and result, and the same
// CallToolResult or the same refusal of it. As an event stream the scanner
// must end (within the event bound) without panicking, whatever the bytes.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":"flowdrop-1","result":{"content":[{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5}}],"structuredContent":{"a":[1,"b",null]},"isError":true,"_meta":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw=="},{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":3,"icons":[{"src":"https://e/i.png"}]},{"type":"resource","resource":{"uri":"mem://b","blob":"AQID"}}]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"tool_result","toolUseId":"u","content":[{"type":"tool_use"}]}]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[null]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":null,"IsError":true}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"unknown tool","data":{"n":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"flowdrop-1\",\"result\":{\"content\":[]}}\n\n",
		"id: 1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\n data: \"method\":\"ping\",\"id\":1}\r\n\r\n: comment\nevent: other\ndata: x\n\n",
		"data without colon\n\n",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzAnswer {
			return
		}
		compareWithSDK(t, data)

		s := newEventScanner(bytes.NewReader(data), 1024)
		defer s.release()
		for range len(data) + 1 {
			ev, err := s.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, errMalformedEvent) {
					t.Fatalf("scanner: %v", err)
				}
				return
			}
			if len(ev.data) > 1024 {
				t.Fatalf("an event of %d bytes passed the 1024-byte bound", len(ev.data))
			}
			if m, err := decodeMessage(ev.data); err == nil && m.Result != nil {
				_, _ = decodeCallToolResult(m.Result)
			}
		}
		t.Fatal("the scanner did not end")
	})
}

// compareWithSDK decodes data as a message and its result with Caller's
// decoders and the go-sdk's, and fails on any difference.
func compareWithSDK(t *testing.T, data []byte) {
	got, gotErr := decodeMessage(data)
	want, wantErr := jsonrpc.DecodeMessage(data)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("message %q: decodeMessage error %v, the SDK's %v", data, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	switch w := want.(type) {
	case *jsonrpc.Request:
		if !got.isRequest() || got.Method != w.Method || got.hasID() != w.ID.IsValid() {
			t.Fatalf("message %q: decoded %+v, the SDK's request %+v", data, got, w)
		}
		if s, ok := w.ID.Raw().(string); ok && got.ID != s {
			t.Fatalf("message %q: id %q, the SDK's %q", data, got.ID, s)
		}
	case *jsonrpc.Response:
		if got.isRequest() {
			t.Fatalf("message %q: decoded a request, the SDK a response", data)
		}
		if s, ok := w.ID.Raw().(string); ok && got.ID != s {
			t.Fatalf("message %q: id %q, the SDK's %q", data, got.ID, s)
		}
		var we *jsonrpc.Error
		if w.Error != nil && !errors.As(w.Error, &we) {
			t.Fatalf("message %q: the SDK's error %T", data, w.Error)
		}
		if !reflect.DeepEqual(got.Error, we) {
			t.Fatalf("message %q: error %+v, the SDK's %+v", data, got.Error, we)
		}
		if !bytes.Equal(got.Result, w.Result) {
			t.Fatalf("message %q: result %q, the SDK's %q", data, got.Result, w.Result)
		}
		if len(w.Result) == 0 {
			return
		}
		res, err := decodeCallToolResult(got.Result)
		var sdk mcp.CallToolResult
		sdkErr := sdk.UnmarshalJSON(w.Result)
		if (err == nil) != (sdkErr == nil) {
			t.Fatalf("result %q: error %v, the SDK's %v", w.Result, err, sdkErr)
		}
		if err == nil && !reflect.DeepEqual(res, exportedOf(&sdk)) {
			t.Fatalf("result %q: %+v, the SDK's %+v", w.Result, res, sdk)
		}
	}
}

func exportedOf(r *mcp.CallToolResult) *mcp.CallToolResult {
	return &mcp.CallToolResult{Meta: r.Meta, Content: r.Content, StructuredContent: r.StructuredContent,
		IsError: r.IsError, InputRequests: r.InputRequests, RequestState: r.RequestState}
}
