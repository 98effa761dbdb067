package server_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// acceptLog records when a listener accepted each connection.
type acceptLog struct {
	net.Listener
	mu    sync.Mutex
	times []time.Time
}

func (l *acceptLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.times = append(l.times, time.Now())
		l.mu.Unlock()
	}
	return c, err
}

func (l *acceptLog) accepted() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.times...)
}

// serveBackend serves a tool service answering "flaky" on lis until stop.
func serveBackend(lis net.Listener) (stop func()) {
	ok := func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		return &gatewayv1.InvokeResponse{}, nil
	}
	s := demotools.NewGRPCServer(demotools.New(demotools.WithHandler("flaky", ok)), nil)
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(lis) }()
	return func() { s.Stop(); <-done }
}

// TestBackendThatIsBackIsReachedWithinASecond: a backend down for 30 s and
// then back on its address is reached again within 1.5 s through each of
// two replicas — one called throughout the outage (the first call after
// the return reconnects on demand), and one called a few times when the
// backend went down and then left alone (its connection stays in TRANSIENT_FAILURE
// and its own back-off, capped at about a second, reconnects it). With
// gRPC's default back-off (capped at 120 s; its attempts fall about 26 s
// and 43 s into an outage) the second replica stays disconnected, and its
// calls refused, for ~13 s after the return.
// FLOWDROP_RECOVERY_OUTAGE shortens the outage for a quick local run.
func TestBackendThatIsBackIsReachedWithinASecond(t *testing.T) {
	t.Parallel()
	outage := 30 * time.Second
	if v := os.Getenv("FLOWDROP_RECOVERY_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FLOWDROP_RECOVERY_OUTAGE=%q: %v", v, err)
		}
		outage = d
	}
	const within = 1500 * time.Millisecond

	lis := gatewaytest.Listen(t)
	addr := lis.Addr().String()
	stop := serveBackend(lis)
	flaky := gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("flaky")(addr) })
	busy := gatewaytest.Start(t, flaky) // called throughout
	idle := gatewaytest.Start(t, flaky) // called as the outage starts, then left alone

	call := func(env *gatewaytest.Env) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "flaky", Arguments: gatewaytest.Args(t, map[string]any{"n": 1})})
		return err
	}
	for name, env := range map[string]*gatewaytest.Env{"busy": busy, "idle": idle} {
		if err := call(env); err != nil {
			t.Fatalf("%s replica before the outage: %v", name, err)
		}
	}

	stop()
	down := time.Now()
	// The first call may find the old connection closing (the channel then
	// goes IDLE and would simply connect on the next call); the next ones
	// try to connect, are refused, and leave it in TRANSIENT_FAILURE.
	for range 3 {
		if err := call(idle); status.Code(err) != codes.Unavailable {
			t.Fatalf("idle replica as the outage starts: %v; want Unavailable", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for time.Since(down) < outage {
		if err := call(busy); status.Code(err) != codes.Unavailable {
			t.Fatalf("busy replica during the outage: %v; want Unavailable", err)
		}
		time.Sleep(250 * time.Millisecond)
	}

	var relis net.Listener
	for range 50 { // the port was ours a moment ago; take it back
		l, err := net.Listen("tcp", addr)
		if err == nil {
			relis = l
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if relis == nil {
		t.Fatalf("could not listen on %s again", addr)
	}
	accepts := &acceptLog{Listener: relis}
	back := time.Now()
	t.Cleanup(serveBackend(accepts))

	// The busy replica: poll until the first OK.
	var busyOK time.Duration
	for busyOK == 0 && time.Since(back) < 10*time.Second {
		if err := call(busy); err == nil {
			busyOK = time.Since(back)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The idle replica reconnects by itself. Each replica holds one
	// connection, so the second one the backend accepts is the later of the
	// two replicas' (the busy one's, already polled, is almost always first).
	for len(accepts.accepted()) < 2 && time.Since(back) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	var idleConnected time.Duration
	if at := accepts.accepted(); len(at) >= 2 {
		idleConnected = at[1].Sub(back)
	}
	idleErr := call(idle)
	t.Logf("outage %v; busy replica first OK after %v; idle replica reconnected after %v (first call: %v)",
		outage, busyOK.Round(time.Millisecond), idleConnected.Round(time.Millisecond), idleErr)

	if busyOK == 0 || busyOK > within {
		t.Errorf("busy replica: first OK %v after the backend came back (0: none within 10 s); want within %v", busyOK, within)
	}
	if idleConnected == 0 || idleConnected > within {
		t.Errorf("idle replica: reconnected %v after the backend came back (0: not within 10 s); want within %v", idleConnected, within)
	}
	if idleErr != nil {
		t.Errorf("idle replica's first call after it reconnected: %v; want OK", idleErr)
	}
}
