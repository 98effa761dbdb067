package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// sessionUpstream is a go-sdk streamable-HTTP server on loopback that
// counts the sessions it holds as its HTTP exchanges show them: one opens
// when a response carries a new Mcp-Session-Id, and is gone when a DELETE
// of it is answered (after the SDK closed it). Both are recorded before
// the response leaves, so a client that saw the answer sees the count.
type sessionUpstream struct {
	URL  string
	mu   sync.Mutex
	open map[string]bool
}

func startSessionUpstream(t *testing.T) *sessionUpstream {
	srv := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	u := &sessionUpstream{open: map[string]bool{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&sessionWriter{ResponseWriter: w, u: u, r: r}, r)
	}))
	t.Cleanup(hs.Close)
	u.URL = hs.URL
	return u
}

// sessions is how many sessions the upstream holds.
func (u *sessionUpstream) sessions() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.open)
}

type sessionWriter struct {
	http.ResponseWriter
	u       *sessionUpstream
	r       *http.Request
	written bool
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		w.u.mu.Lock()
		switch id := w.r.Header.Get("Mcp-Session-Id"); {
		case w.r.Method == http.MethodDelete && code == http.StatusNoContent:
			delete(w.u.open, id)
		case id == "" && w.Header().Get("Mcp-Session-Id") != "":
			w.u.open[w.Header().Get("Mcp-Session-Id")] = true
		}
		w.u.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestMCPSubjectSessionsBounded: per-caller sessions of one upstream (a
// real go-sdk server on loopback, sessionUpstream) stay within the cap however many
// subjects call, the least recently used closed at the upstream; one with
// a call in flight is never evicted, and with every one busy a new
// subject is refused Unavailable naming the tool; sessions unused for the
// idle time close. Every eviction is counted by reason.
func TestMCPSubjectSessionsBounded(t *testing.T) {
	up := startSessionUpstream(t)
	evictions := map[string]int{}
	countCh := make(chan string, 64)
	ts := NewToolService(ToolServiceConfig{DefaultTimeout: 10 * time.Second, MaxRecvMsgSize: 1 << 20, MaxSendMsgSize: 1 << 20,
		MCPSubjectSessions: 3, MCPSubjectSessionIdle: time.Hour, CountMCPSessionEviction: func(r string) { countCh <- r }})
	t.Cleanup(ts.Close)
	m := NewMCPUpstream(ts)
	t.Cleanup(m.Close)
	tool := &registry.MCPTool{URL: up.URL, Tool: "add_items"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// take opens (or reuses) subject's session and holds it until the
	// returned release.
	take := func(subject string) (func(), error) {
		s, _, _, _, err := m.session(ctx, tool, nil, subject)
		if err != nil {
			return nil, err
		}
		return func() { m.release(s) }, nil
	}
	use := func(subject string) {
		t.Helper()
		release, err := take(subject)
		if err != nil {
			t.Fatalf("session of %s: %v", subject, err)
		}
		release()
	}
	subjects := func() []string {
		m.mu.Lock()
		defer m.mu.Unlock()
		var out []string
		for k := range m.sessions {
			out = append(out, k.subject)
		}
		slices.Sort(out)
		return out
	}
	settle := func() {
		m.ending.Wait() // the evicted sessions' closes (their DELETE) have returned
		for {
			select {
			case r := <-countCh:
				evictions[r]++
			default:
				return
			}
		}
	}

	// Twenty subjects, one after another: never more than 3 sessions at
	// the upstream, the least recently used going first.
	for i := range 20 {
		use(fmt.Sprintf("user-%02d", i))
		settle()
		if n := up.sessions(); n > 3 {
			t.Fatalf("after subject %d the upstream holds %d sessions, want at most the cap of 3", i, n)
		}
	}
	if got, want := subjects(), []string{"user-17", "user-18", "user-19"}; !slices.Equal(got, want) {
		t.Errorf("sessions kept = %q, want the 3 most recently used %q", got, want)
	}
	if evictions[EvictionCap] != 17 {
		t.Errorf("cap evictions counted = %d, want 17", evictions[EvictionCap])
	}

	// Recency, not age: user-17 used again outlives user-18.
	use("user-17")
	use("user-20")
	settle()
	if got, want := subjects(), []string{"user-17", "user-19", "user-20"}; !slices.Equal(got, want) {
		t.Errorf("after user-17 was used again, sessions = %q, want %q (user-18 the least recently used)", got, want)
	}

	// Sessions with a call in flight are not evicted; with all 3 busy a
	// new subject is refused, and the upstream still holds 3.
	var held []func()
	for _, s := range []string{"user-17", "user-19", "user-20"} {
		release, err := take(s)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if _, err := take("user-99"); !errors.Is(err, errSubjectSessionsFull) {
		t.Fatalf("a new subject with every session busy: %v, want errSubjectSessionsFull", err)
	}
	if pe := m.failure(ctx, mcpCall(t, up.URL, "add_items", nil), 0, "", errSubjectSessionsFull); pe.Code != pipeline.Unavailable || pe.Message != `tool "mcp.t": its upstream MCP server has its 3 sessions for callers all in use; retry shortly` {
		t.Errorf("the refusal = %d %q, want Unavailable naming the tool and the cap", pe.Code, pe.Message)
	}
	settle()
	if n := up.sessions(); n != 3 {
		t.Errorf("with every session busy the upstream holds %d sessions, want 3", n)
	}
	for _, release := range held {
		release()
	}

	// Idle expiry: a sweep an hour and a second later closes them all.
	m.expireIdle(time.Now().Add(time.Hour + time.Second))
	settle()
	if got := subjects(); len(got) != 0 {
		t.Errorf("after the idle time, sessions = %q, want none", got)
	}
	if n := up.sessions(); n != 0 {
		t.Errorf("after the idle time the upstream holds %d sessions, want 0", n)
	}
	if evictions[EvictionIdle] != 3 {
		t.Errorf("idle evictions counted = %d, want 3", evictions[EvictionIdle])
	}

	// The shared (static) session is outside the bound and never expires.
	use("")
	m.expireIdle(time.Now().Add(2 * time.Hour))
	settle()
	if got := subjects(); !slices.Equal(got, []string{""}) {
		t.Errorf("sessions = %q, want the shared one kept", got)
	}
}
