package redisstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/mcptasks"
	"github.com/flowdrop/gateway/internal/redisstate"
	"github.com/flowdrop/gateway/internal/redistest"
)

// relayNode is one replica's side of TaskRelay, answering with handle.
type relayNode struct {
	r      *redisstate.TaskRelay
	mu     sync.Mutex
	handle func(context.Context, mcptasks.RelayRequest) mcptasks.RelayAnswer
	calls  atomic.Int64
}

func (n *relayNode) serve(ctx context.Context, req mcptasks.RelayRequest) mcptasks.RelayAnswer {
	n.calls.Add(1)
	n.mu.Lock()
	h := n.handle
	n.mu.Unlock()
	return h(ctx, req)
}

func (n *relayNode) set(h func(context.Context, mcptasks.RelayRequest) mcptasks.RelayAnswer) {
	n.mu.Lock()
	n.handle = h
	n.mu.Unlock()
}

func echo(_ context.Context, req mcptasks.RelayRequest) mcptasks.RelayAnswer {
	b, _ := json.Marshal(map[string]string{"taskId": req.TaskID, "method": req.Method})
	return mcptasks.RelayAnswer{Result: b}
}

func relayReq(taskID string) mcptasks.RelayRequest {
	return mcptasks.RelayRequest{Method: "tasks/get", URL: "stdio://everything", Instance: "0123456789abcdef01234567", TaskID: taskID, Limit: 4 << 20}
}

// startRelays serves n replicas' relays on one real redis-server and
// waits until each answers the first.
func startRelays(t *testing.T, rs *redistest.Server, n int) []*relayNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	out := make([]*relayNode, n)
	for i := range out {
		c, err := redisstate.Open(redisstate.Config{Addr: rs.Addr(), Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		node := &relayNode{r: c.TaskRelay("test:relay:"), handle: echo}
		out[i] = node
		wg.Go(func() { node.r.Serve(ctx, node.serve) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, node := range out {
		for {
			actx, stop := context.WithTimeout(ctx, time.Second)
			_, err := out[0].r.Ask(actx, node.r.Self(), relayReq("warm-up"))
			stop()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never answered: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return out
}

func redisKeys(t *testing.T, rs *redistest.Server) []string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A request reaches the replica named, as sent; its answer comes back,
// small in the message, large through a key that is gone afterwards;
// nothing is left in Redis.
func TestTaskRelayAnswers(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 3)
	ctx := context.Background()
	large := `"` + strings.Repeat("x", 300<<10) + `"`
	var seen []mcptasks.RelayRequest
	var mu sync.Mutex
	nodes[2].set(func(_ context.Context, req mcptasks.RelayRequest) mcptasks.RelayAnswer {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		switch req.TaskID {
		case "large":
			return mcptasks.RelayAnswer{Result: json.RawMessage(large)}
		case "refused":
			return mcptasks.RelayAnswer{Code: -32602, Message: "no such task"}
		}
		return mcptasks.RelayAnswer{Result: json.RawMessage(`{"status":"working"}`)}
	})
	before := nodes[1].calls.Load()
	cases := []struct {
		reason, taskID string
		want           mcptasks.RelayAnswer
	}{
		{"a small answer travels in its message", "small", mcptasks.RelayAnswer{Result: json.RawMessage(`{"status":"working"}`)}},
		{"an answer over the inline bound travels under a key", "large", mcptasks.RelayAnswer{Result: json.RawMessage(large)}},
		{"the upstream's JSON-RPC error comes back as its code and message", "refused", mcptasks.RelayAnswer{Code: -32602, Message: "no such task"}},
	}
	for _, tc := range cases {
		actx, stop := context.WithTimeout(ctx, 10*time.Second)
		got, err := nodes[0].r.Ask(actx, nodes[2].r.Self(), relayReq(tc.taskID))
		stop()
		if err != nil || string(got.Result) != string(tc.want.Result) || got.Code != tc.want.Code || got.Message != tc.want.Message {
			t.Fatalf("%s: Ask = %.80s, %d %q, %v; want %.80s", tc.reason, got.Result, got.Code, got.Message, err, tc.want.Result)
		}
	}
	mu.Lock()
	if len(seen) != len(cases) || !reflect.DeepEqual(seen[0], relayReq("small")) {
		t.Fatalf("the holder saw %+v; want the requests as sent", seen)
	}
	mu.Unlock()
	if nodes[1].calls.Load() != before {
		t.Fatal("a replica the request did not name ran it")
	}
	if keys := redisKeys(t, rs); len(keys) != 0 {
		t.Fatalf("Redis keeps %v after the answers were taken", keys)
	}
}

// No replica of the id named runs: the asker learns at once, as
// ErrHolderUnavailable (never an answer).
func TestTaskRelayNoHolder(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 1)
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_, err := nodes[0].r.Ask(ctx, "00000000000000000000dead", relayReq("t"))
	if !errors.Is(err, mcptasks.ErrHolderUnavailable) || !strings.Contains(err.Error(), "no replica of that id") {
		t.Fatalf("Ask of a replica no one runs = %v; want ErrHolderUnavailable (no replica of that id)", err)
	}
}

// Redis down: the asker learns it as ErrHolderUnavailable (never an
// answer, never "no such task"); back up, the relay serves again (go-redis
// resubscribes).
func TestTaskRelayRedisDown(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 2)
	rs.Stop()
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := nodes[0].r.Ask(ctx, nodes[1].r.Self(), relayReq("t"))
	stop()
	if !errors.Is(err, mcptasks.ErrHolderUnavailable) {
		t.Fatalf("Ask with Redis down = %v; want ErrHolderUnavailable", err)
	}
	rs.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, stop := context.WithTimeout(context.Background(), time.Second)
		_, err := nodes[0].r.Ask(ctx, nodes[1].r.Self(), relayReq("t"))
		stop()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ask after Redis came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A holder that does not answer within the asker's budget: the asker
// gives up with ErrHolderUnavailable.
func TestTaskRelayTimeout(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 2)
	release := make(chan struct{})
	defer close(release)
	nodes[1].set(func(context.Context, mcptasks.RelayRequest) mcptasks.RelayAnswer {
		<-release // deaf to its own deadline: the asker must not wait on it
		return mcptasks.RelayAnswer{Result: json.RawMessage(`{}`)}
	})
	ctx, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	_, err := nodes[0].r.Ask(ctx, nodes[1].r.Self(), relayReq("slow"))
	if !errors.Is(err, mcptasks.ErrHolderUnavailable) || !strings.Contains(err.Error(), "no answer in time") {
		t.Fatalf("Ask of a silent holder = %v; want ErrHolderUnavailable (no answer in time)", err)
	}
}

// What is not a request of the gateway's — over the size bound, not
// JSON, not a task request — is dropped unread; the holder serves on.
func TestTaskRelayDropsForeignMessages(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 2)
	holder := nodes[1]
	before := holder.calls.Load()
	raw := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer raw.Close()
	ctx := context.Background()
	req := relayReq("t")
	oversized := req
	oversized.TaskID = strings.Repeat("x", 100<<10)
	notTask := req
	notTask.Method = "tools/call"
	msg := func(r mcptasks.RelayRequest, pad int) string {
		b, _ := json.Marshal(map[string]any{"o": "q", "n": "nonce", "f": nodes[0].r.Self(), "q": r, "w": 1000, "pad": strings.Repeat("x", pad)})
		return string(b)
	}
	cases := []struct{ reason, payload string }{
		// A request the holder would run but for its size.
		{"over the message bound", msg(req, 100<<10)},
		{"not JSON", "{" + strings.Repeat("x", 100)},
		{"not a task method", msg(notTask, 0)},
	}
	for _, tc := range cases {
		if n, err := raw.Publish(ctx, "test:relay:q:"+holder.r.Self(), tc.payload).Result(); err != nil || n != 1 {
			t.Fatalf("%s: publish = %d, %v", tc.reason, n, err)
		}
	}
	// Messages on one channel arrive in order: once this one is answered,
	// the ones before it were read.
	actx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if _, err := nodes[0].r.Ask(actx, holder.r.Self(), req); err != nil {
		t.Fatalf("Ask after the foreign messages = %v; want an answer", err)
	}
	if n := holder.calls.Load() - before; n != 1 {
		t.Fatalf("the holder ran %d requests; want 1 (the foreign messages dropped)", n)
	}
	// A request over the bounds is refused before it is sent.
	if _, err := nodes[0].r.Ask(actx, holder.r.Self(), oversized); err == nil || errors.Is(err, mcptasks.ErrHolderUnavailable) {
		t.Fatalf("Ask of an oversized request = %v; want its refusal", err)
	}
}

// At most MaxRelayed requests wait at once per replica, and at most
// MaxRelayed run per holder: one more is refused at once, as
// ErrHolderUnavailable, on either side.
func TestTaskRelayBounds(t *testing.T) {
	rs := redistest.Start(t)
	nodes := startRelays(t, rs, 3)
	holder := nodes[2]
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	defer releaseAll() // a failure below still lets the holder end
	started := make(chan struct{}, 2*redisstate.MaxRelayed)
	holder.set(func(context.Context, mcptasks.RelayRequest) mcptasks.RelayAnswer {
		started <- struct{}{}
		<-release
		return mcptasks.RelayAnswer{Result: json.RawMessage(`{}`)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asks sync.WaitGroup
	errs := make(chan error, redisstate.MaxRelayed)
	for range redisstate.MaxRelayed {
		asks.Go(func() {
			_, err := nodes[0].r.Ask(ctx, holder.r.Self(), relayReq("held"))
			errs <- err
		})
	}
	for range redisstate.MaxRelayed {
		<-started // every one runs on the holder
	}
	if _, err := nodes[0].r.Ask(ctx, holder.r.Self(), relayReq("one more")); !errors.Is(err, mcptasks.ErrHolderUnavailable) || !strings.Contains(err.Error(), "already waits") {
		t.Fatalf("the asker's request beyond its bound = %v; want ErrHolderUnavailable (already waits)", err)
	}
	if _, err := nodes[1].r.Ask(ctx, holder.r.Self(), relayReq("one more")); !errors.Is(err, mcptasks.ErrHolderUnavailable) || !strings.Contains(err.Error(), "runs") {
		t.Fatalf("a request beyond the holder's bound = %v; want ErrHolderUnavailable (it runs as many already)", err)
	}
	releaseAll()
	asks.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a request within the bounds: %v", err)
		}
	}
}
