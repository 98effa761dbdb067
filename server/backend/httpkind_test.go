package backend

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// TestHTTPOperationResponses: the HTTP kind against real loopback
// servers — what each kind of response and each unfit argument becomes,
// and that no redirect is followed.
func TestHTTPOperationResponses(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`"elsewhere"`)) }))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"body":` + orNull(string(b)) + `,"q":"` + r.URL.RawQuery + `"}`))
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("pong"))
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/badjson", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`"` + strings.Repeat("x", 4096) + `"`)) })
	mux.HandleFunc("/long4xx", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, strings.Repeat("é", 800), http.StatusUnprocessableEntity)
	})
	mux.HandleFunc("/off", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ts := NewToolService(ToolServiceConfig{DefaultTimeout: 5e9, MaxRecvMsgSize: 2048, MaxSendMsgSize: 256})
	t.Cleanup(ts.Close)
	h := NewHTTPOperation(ts)
	t.Cleanup(h.Close)

	cases := []struct {
		name, reason string
		op           registry.HTTPOperation
		args         map[string]any
		wantValue    string // the result's JSON, when it succeeds
		wantToolErr  string // in the tool error's text
		wantCode     pipeline.Code
		wantIn       string // in the refusal's message
		wantNotIn    string
	}{
		{name: "body-argument", reason: "a body argument is the whole JSON body, here an array; query arrays repeat the key",
			op:   registry.HTTPOperation{Method: "POST", Path: "/echo", BodyArgument: "items", Parameters: []registry.HTTPParameter{{Name: "k", In: registry.HTTPInQuery}}},
			args: map[string]any{"items": []any{1.0, "two"}, "k": []any{"a", "b"}}, wantValue: `{"body":[1,"two"],"q":"k=a&k=b"}`},
		{name: "text", reason: "a 2xx that is not JSON is a string result",
			op: registry.HTTPOperation{Method: "GET", Path: "/text"}, wantValue: `"pong"`},
		{name: "empty", reason: "204 No Content is a null result",
			op: registry.HTTPOperation{Method: "DELETE", Path: "/empty"}, wantValue: `null`},
		{name: "same-host-redirect", reason: "a redirect within the base URL's host is not followed either: FailedPrecondition (a retry would not help), naming no URL",
			op: registry.HTTPOperation{Method: "GET", Path: "/same"}, wantCode: pipeline.FailedPrecondition, wantIn: "redirect (HTTP 307)", wantNotIn: "/text"},
		{name: "off-host-redirect", reason: "a redirect to another host is not followed, naming neither URL",
			op: registry.HTTPOperation{Method: "GET", Path: "/off"}, wantCode: pipeline.FailedPrecondition, wantIn: "redirect (HTTP 302)", wantNotIn: "127.0.0.1"},
		{name: "bad-json", reason: "a body declared JSON that does not parse is the backend's fault, not a string",
			op: registry.HTTPOperation{Method: "GET", Path: "/badjson"}, wantCode: pipeline.Internal, wantIn: "does not parse"},
		{name: "too-large", reason: "the response is bounded by the backend receive limit",
			op: registry.HTTPOperation{Method: "GET", Path: "/big"}, wantCode: pipeline.ResourceExhausted, wantIn: "2048 bytes"},
		{name: "long-4xx", reason: "a 4xx quotes at most 512 bytes of its body, cut at a rune, marked as cut",
			op: registry.HTTPOperation{Method: "GET", Path: "/long4xx"}, wantToolErr: "HTTP 422 Unprocessable Entity: éé"},
		{name: "send-limit", reason: "a body over the backend send limit is refused before sending",
			op:   registry.HTTPOperation{Method: "POST", Path: "/echo", BodyArgument: "items"},
			args: map[string]any{"items": strings.Repeat("y", 300)}, wantCode: pipeline.ResourceExhausted, wantIn: "send limit"},
		{name: "unmapped", reason: "an argument the operation does not map is refused, naming it, not dropped",
			op: registry.HTTPOperation{Method: "GET", Path: "/text"}, args: map[string]any{"extra": "secret-value"},
			wantCode: pipeline.InvalidArgument, wantIn: `"extra"`, wantNotIn: "secret-value"},
		{name: "header-crlf", reason: "a header value with a line break is refused (no header injection)",
			op:   registry.HTTPOperation{Method: "GET", Path: "/text", Parameters: []registry.HTTPParameter{{Name: "X-Note", In: registry.HTTPInHeader}}},
			args: map[string]any{"X-Note": "a\r\nX-Flowdrop-Caller: root"}, wantCode: pipeline.InvalidArgument, wantIn: "line break", wantNotIn: "root"},
		{name: "header-control", reason: "a header value with any other control character is the caller's to fix: InvalidArgument, not an unreachable backend",
			op:   registry.HTTPOperation{Method: "GET", Path: "/text", Parameters: []registry.HTTPParameter{{Name: "X-Note", In: registry.HTTPInHeader}}},
			args: map[string]any{"X-Note": []any{"fine", "bell\x07secret"}}, wantCode: pipeline.InvalidArgument, wantIn: `"X-Note" must not hold a line break or other control character`, wantNotIn: "secret"},
		{name: "path-dot-dot", reason: `".." would remove the segment before it: refused naming the parameter`,
			op:   registry.HTTPOperation{Method: "GET", Path: "/x/{id}/y", Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}}},
			args: map[string]any{"id": ".."}, wantCode: pipeline.InvalidArgument, wantIn: `"id" must not be empty, "." or ".."`},
		{name: "path-dot", reason: `"." is a dot segment too`,
			op:   registry.HTTPOperation{Method: "GET", Path: "/x/{id}/y", Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}}},
			args: map[string]any{"id": "."}, wantCode: pipeline.InvalidArgument, wantIn: `"id" must not be empty`},
		{name: "path-empty", reason: "an empty segment is another path (and /x/{id} a shorter one)",
			op:   registry.HTTPOperation{Method: "GET", Path: "/x/{id}", Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}}},
			args: map[string]any{"id": ""}, wantCode: pipeline.InvalidArgument, wantIn: `"id" must not be empty`},
		{name: "path-object", reason: "a path argument must be a scalar",
			op:   registry.HTTPOperation{Method: "GET", Path: "/x/{id}", Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}}},
			args: map[string]any{"id": map[string]any{"a": 1.0}}, wantCode: pipeline.InvalidArgument, wantIn: "path parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			op.BaseURL = srv.URL
			e, err := registry.Compile(registry.Tool{Name: "http." + tc.name, Spec: &registry.BackendSpec{HTTPOperation: &op},
				InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}})
			if err != nil {
				t.Fatal(err)
			}
			args, err := structpb.NewStruct(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			c := pipeline.NewCall(e.Tool.Name, "call-1", args)
			c.Entry = e
			res, err := h.Invoke(context.Background(), c)
			if tc.wantCode != pipeline.OK {
				var pe *pipeline.Error
				if !errors.As(err, &pe) || pe.Code != tc.wantCode || !strings.Contains(pe.Message, tc.wantIn) ||
					(tc.wantNotIn != "" && strings.Contains(pe.Message, tc.wantNotIn)) || !strings.Contains(pe.Message, e.Tool.Name) {
					t.Fatalf("Invoke: %v, want %v naming the tool with %q, not %q (%s)", err, tc.wantCode, tc.wantIn, tc.wantNotIn, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Invoke: %v (%s)", err, tc.reason)
			}
			if tc.wantToolErr != "" {
				text := res.Value.GetStringValue()
				if !res.IsError || !strings.HasPrefix(text, tc.wantToolErr) || len(text) > 600 || !strings.HasSuffix(text, "…") {
					t.Fatalf("result %q (is_error %v), want a bounded tool error starting %q (%s)", text, res.IsError, tc.wantToolErr, tc.reason)
				}
				return
			}
			got, _ := protojson.Marshal(res.Value)
			if res.IsError || strings.ReplaceAll(string(got), " ", "") != tc.wantValue {
				t.Errorf("result %s (is_error %v), want %s (%s)", got, res.IsError, tc.wantValue, tc.reason)
			}
		})
	}
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// TestHTTPOperationDeadline: the call's budget is the ToolBackendService
// kind's (here the tool's timeout): a service that does not answer in it
// is DeadlineExceeded naming the tool and the budget's source, and the
// request is cancelled (the handler sees it end).
func TestHTTPOperationDeadline(t *testing.T) {
	cancelled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(10 * time.Second): // bound: a broken budget fails the test, not hangs it
		}
	}))
	t.Cleanup(srv.Close)
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: 10 * time.Second, MaxRecvMsgSize: 1 << 20})
	t.Cleanup(ts.Close)
	h := NewHTTPOperation(ts)
	t.Cleanup(h.Close)
	e, err := registry.Compile(registry.Tool{Name: "http.slow", Timeout: 50 * time.Millisecond,
		Spec:        &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{BaseURL: srv.URL, Method: "GET", Path: "/"}},
		InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}})
	if err != nil {
		t.Fatal(err)
	}
	c := pipeline.NewCall(e.Tool.Name, "", &structpb.Struct{})
	c.Entry = e
	_, err = h.Invoke(context.Background(), c)
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Code != pipeline.DeadlineExceeded || !strings.Contains(pe.Message, "http.slow") || !strings.Contains(pe.Message, "the tool's timeout") {
		t.Fatalf("Invoke: %v, want DeadlineExceeded naming the tool and its timeout", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("the service's request was not cancelled at the deadline")
	}
}
