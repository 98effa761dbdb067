package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sideSession is a real go-sdk client session over a sideConn to a real
// go-sdk server (in memory), whose tool "steps" sends five
// notifications/progress for its token and answers at once; on revision
// version ("": the SDK's latest).
func sideSession(t *testing.T, version string) *Caller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	srv := mcp.NewServer(&mcp.Implementation{Name: "steps", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			for i := 1; i <= 5; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 5})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	side := &sideTransport{t: ct}
	cs, err := mcp.NewClient(clientInfo, nil).Connect(ctx, side, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &Caller{Session: cs, sdk: true, side: side.made}
}

// A call's progress sent just before its answer reaches the watcher, in
// order, before the call is done with it (stop): none is lost to the
// SDK's handling of notifications on a goroutine of its own. Many rounds,
// since what this guards against is a race.
func TestSideProgressBeforeTheAnswer(t *testing.T) {
	c := sideSession(t, "")
	ctx := context.Background()
	for round := range 50 {
		token := ProgressToken(uint64(round + 1))
		var got []float64
		stop := c.WatchProgress(token, func(p Progress) { got = append(got, p.Progress) })
		p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
		p.SetProgressToken(token)
		if _, err := CallThroughSDK(ctx, c.Session, p); err != nil {
			t.Fatal(err)
		}
		stop()
		if !slices.Equal(got, []float64{1, 2, 3, 4, 5}) {
			t.Fatalf("round %d: the watcher was handed %v, want steps 1 to 5 in order", round, got)
		}
	}
	// A call without a watcher: its progress (a token of the gateway's no
	// call watches) is dropped, and the session carries on.
	p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	p.SetProgressToken(ProgressToken(1000))
	if _, err := CallThroughSDK(ctx, c.Session, p); err != nil {
		t.Fatal(err)
	}
}

// The gateway's own requests go beside the SDK's on the one connection:
// their answers (here the go-sdk server's refusal of a method it does not
// know) come back to the gateway, never to the SDK, which carries on; an
// answer over the call's response budget ends it with ErrResponseTooLarge;
// a request on an ended connection fails at once.
func TestSideRequests(t *testing.T) {
	c := sideSession(t, "")
	ctx := context.Background()
	_, err := c.sideRequest(ctx, "tasks/get", map[string]string{"taskId": "t1"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("tasks/get on a server without tasks: %v; want its -32601", err)
	}
	res, err := c.sideRequest(ctx, "tools/list", map[string]any{})
	if err != nil || !strings.Contains(string(res), `"steps"`) {
		t.Fatalf("tools/list beside the SDK: %s, %v; want the server's listing", res, err)
	}
	if _, err := c.Session.ListTools(ctx, nil); err != nil {
		t.Fatalf("the SDK's own request after the gateway's: %v", err)
	}
	lctx, stop := WithResponseLimit(ctx, 10)
	defer stop()
	if _, err := c.sideRequest(lctx, "tools/list", map[string]any{}); !errors.Is(err, ErrResponseTooLarge) || !errors.Is(context.Cause(lctx), ErrResponseTooLarge) {
		t.Fatalf("tools/list over a 10-byte budget: %v (cause %v); want ErrResponseTooLarge", err, context.Cause(lctx))
	}
	_ = c.Session.Close()
	if _, err := c.sideRequest(ctx, "tools/list", map[string]any{}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("a request on the ended connection: %v; want ErrConnectionClosed", err)
	}
}

// Task requests go beside the SDK on a 2025-11-25 session: one for a task
// made on another connection (a process that has ended since) is that
// connection's end, never a request sent on this one; one for this
// connection's reaches the upstream; a server that answers a task-augmented
// call with no task is refused. A session on 2026-07-28 carries none (the
// gateway speaks that revision's tasks extension over HTTP only).
func TestSideTaskRequests(t *testing.T) {
	ctx := context.Background()
	c := sideSession(t, "2025-11-25")
	if !c.CarriesTasks() {
		t.Fatalf("a side session on %s does not carry task requests", c.revision())
	}
	if _, err := c.TaskRequest(ctx, "another-connection", "tasks/get", "t1"); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("TaskRequest for another connection's task: %v; want ErrSessionMissing", err)
	}
	var rpc *jsonrpc.Error
	if _, err := c.TaskRequest(ctx, c.sessionKey(), "tasks/get", "t1"); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("TaskRequest on its connection: %v; want the go-sdk server's -32601 (it knows no tasks)", err)
	}
	if _, _, err := c.CallToolTask(ctx, "steps", nil, 0); err == nil || !strings.Contains(err.Error(), "without a task") {
		t.Fatalf("CallToolTask answered with a plain result: %v; want it refused", err)
	}
	latest := sideSession(t, "")
	if latest.CarriesTasks() {
		t.Fatalf("a side session on %s carries 2025-11-25 task requests", latest.revision())
	}
	if _, _, err := latest.CallToolTask(ctx, "steps", nil, 0); !errors.Is(err, ErrTasksUnsupported) {
		t.Fatalf("CallToolTask on %s: %v; want ErrTasksUnsupported", latest.revision(), err)
	}
}

// What a hostile upstream sends on the one connection stays bounded and
// cannot reach the gateway's requests or calls it does not own: an answer
// forged under an id of the gateway's that it never sent is dropped, never
// handed to the SDK; a flood of progress for a call waiting on a slow
// caller is queued up to maxQueuedProgress and the rest dropped, while the
// connection is read on (the next message arrives with the caller still
// stuck); progress for a token of the gateway's no call watches is dropped.
func TestSideHostileUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	raw, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	side := newSideConn(raw)
	up, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	defer side.Close()

	release := make(chan struct{})
	handed := 0
	stop := side.watchProgress(ProgressToken(1), func(Progress) {
		if handed == 0 {
			<-release // the caller is slow to read
		}
		handed++
	})
	send := func(m jsonrpc.Message) {
		t.Helper()
		if err := up.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	notify := func(method, params string) *jsonrpc.Request {
		return &jsonrpc.Request{Method: method, Params: json.RawMessage(params)}
	}
	forged, _ := jsonrpc.MakeID(sideIDPrefix + "99")
	sdkID, _ := jsonrpc.MakeID(float64(5))
	go func() {
		send(&jsonrpc.Response{ID: forged, Result: json.RawMessage(`{"task":{"taskId":"x","status":"completed"}}`)})
		for i := 1; i <= 200; i++ {
			send(notify("notifications/progress", fmt.Sprintf(`{"progressToken":%q,"progress":%d}`, ProgressToken(1), i)))
		}
		send(notify("notifications/progress", fmt.Sprintf(`{"progressToken":%q,"progress":1}`, ProgressToken(2))))
		send(&jsonrpc.Response{ID: sdkID, Result: json.RawMessage(`{}`)})
	}()
	msg, err := side.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := msg.(*jsonrpc.Response); !ok || r.ID != sdkID {
		t.Fatalf("the SDK read %#v; want only its own answer (id 5): the forged answer and the progress taken off", msg)
	}
	close(release)
	stop()
	if handed < maxQueuedProgress || handed > maxQueuedProgress+1 {
		t.Fatalf("a flood of 200 for a stuck caller handed %d; want the queue's bound, %d (and the one being handed)", handed, maxQueuedProgress)
	}
}
