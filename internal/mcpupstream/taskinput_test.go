package mcpupstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// taskAskUpstream is a stateful go-sdk server (2025-11-25) in front of
// which tasks/result of any task asks for input on its stream, as a
// 2025-11-25 task in input_required does, and answers with what it was
// told; the answers' sessions are recorded.
type taskAskUpstream struct {
	URL      string
	mu       sync.Mutex
	n        int
	waiting  map[string]chan json.RawMessage
	sessions []string
}

func startTaskAskUpstream(t *testing.T) *taskAskUpstream {
	t.Helper()
	u := &taskAskUpstream{waiting: map[string]chan json.RawMessage{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "task-asks", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(body, &msg)
		switch {
		case msg.Method == "" && (msg.Result != nil || msg.Error != nil):
			// An answer, taken once: a result, or an error (told as such).
			var id string
			_ = json.Unmarshal(msg.ID, &id)
			u.mu.Lock()
			ch := u.waiting[id]
			delete(u.waiting, id)
			u.sessions = append(u.sessions, r.Header.Get("Mcp-Session-Id"))
			u.mu.Unlock()
			if ch == nil {
				http.Error(w, "no such request", http.StatusBadRequest)
				return
			}
			if msg.Error != nil {
				msg.Result = json.RawMessage(`"the error ` + strings.ReplaceAll(string(msg.Error), `"`, `'`) + `"`)
			}
			ch <- msg.Result
			w.WriteHeader(http.StatusAccepted)
		case msg.Method == "tasks/result":
			u.mu.Lock()
			u.n++
			id := fmt.Sprintf("ask-%d", u.n)
			ch := make(chan json.RawMessage, 1)
			u.waiting[id] = ch
			u.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%q,\"method\":\"elicitation/create\",\"params\":{\"message\":\"Sure?\",\"requestedSchema\":{\"type\":\"object\"}}}\n\n", id)
			w.(http.Flusher).Flush()
			select {
			case a := <-ch:
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", msg.ID, a)
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

// TestTaskResultInput: a task's request for input on the stream of
// tasks/result, sent through one session for a task of another, is
// answered into the task's session — at once by an InputFunc, or later by
// AnswerRequest with the id RequestID gave, the stream read on meanwhile.
func TestTaskResultInput(t *testing.T) {
	u := startTaskAskUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func() *mcpupstream.Caller {
		c, err := mcpupstream.ConnectCaller(ctx, u.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{Input: mcpupstream.InputKinds{Elicitation: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	via, owner := connect(), connect()
	taskSession := owner.Session.ID()
	if taskSession == "" || taskSession == via.Session.ID() {
		t.Fatalf("sessions %q and %q; want two", via.Session.ID(), taskSession)
	}
	rows := []struct {
		reason string
		answer func(ctx context.Context, id chan json.RawMessage) mcpupstream.InputFunc
		later  bool
	}{
		{"answered at once by the InputFunc", func(context.Context, chan json.RawMessage) mcpupstream.InputFunc {
			return func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"action":"accept"}`), nil
			}
		}, false},
		{"answered later (ErrAnswerLater) by AnswerRequest", func(_ context.Context, ids chan json.RawMessage) mcpupstream.InputFunc {
			return func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
				ids <- mcpupstream.RequestID(ctx)
				return nil, mcpupstream.ErrAnswerLater
			}
		}, true},
	}
	for i, row := range rows {
		ids := make(chan json.RawMessage, 1)
		done := make(chan error, 1)
		var got json.RawMessage
		go func() {
			var err error
			got, err = via.TaskRequest(mcpupstream.WithInput(ctx, row.answer(ctx, ids)), taskSession, "tasks/result", "t1")
			done <- err
		}()
		if row.later {
			select {
			case id := <-ids:
				if string(id) != fmt.Sprintf(`"ask-%d"`, i+1) {
					t.Fatalf("%s: RequestID = %s", row.reason, id)
				}
				if err := via.AnswerRequest(ctx, taskSession, id, json.RawMessage(`{"action":"accept"}`), nil); err != nil {
					t.Fatalf("%s: AnswerRequest: %v", row.reason, err)
				}
			case err := <-done:
				t.Fatalf("%s: tasks/result ended before the request was answered: %v", row.reason, err)
			}
		}
		if err := <-done; err != nil || !strings.Contains(string(got), "accept") {
			t.Fatalf("%s: tasks/result = %s, %v; want the upstream's result after the answer", row.reason, got, err)
		}
		u.mu.Lock()
		sessions := append([]string(nil), u.sessions...)
		u.mu.Unlock()
		if len(sessions) != i+1 || sessions[i] != taskSession {
			t.Fatalf("%s: answers were posted in sessions %q; want the task's %q", row.reason, sessions, taskSession)
		}
	}
	if err := via.AnswerRequest(ctx, taskSession, json.RawMessage(`{"x":1}`), json.RawMessage(`{}`), nil); err == nil {
		t.Fatal("AnswerRequest with an object for an id: no error")
	}
}
