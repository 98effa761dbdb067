package loadgen

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       int64
		ok         bool
		reason     string
	}{
		{"plain", "42 (flowdrop-gatew) S 1 42 42 0 -1 4194560 1 0 0 0 150 37 0 0 20 0 9 0 100 1000 200", 187, true, "utime 150 + stime 37"},
		{"name with spaces and parens", "7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1", 11, true, "fields count from the last ')'"},
		{"truncated", "7 (x) R 1 2 3", 0, false, "too few fields must fail, not read garbage"},
		{"no name", "garbage", 0, false, "no ')' at all"},
	} {
		got, err := parseStatCPU([]byte(tc.line))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, ok=%v (%s)", tc.name, got, err, tc.want, tc.ok, tc.reason)
		}
	}
}

// TestOwnProcess reads this test process's own /proc files: the CPU read
// from /proc/PID/stat agrees with getrusage's over a spin (whatever share
// of a loaded machine the spin gets), VmHWM is positive, and the peak can
// be reset.
func TestOwnProcess(t *testing.T) {
	pid := []int{os.Getpid()}
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, err := ProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	r0 := rusage()
	for deadline := time.Now().Add(10 * time.Second); rusage()-r0 < 200*time.Millisecond && time.Now().Before(deadline); {
	}
	c1, err := ProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	r1 := rusage()
	// Other goroutines of the test binary run too; both readings count
	// them. /proc counts whole 10 ms ticks, so allow a few.
	if got, want := c1-c0, r1-r0; want < 200*time.Millisecond || got < want-40*time.Millisecond || got > want+40*time.Millisecond {
		t.Errorf("/proc says %v of CPU over the spin, getrusage %v: want them within 40 ms (and ≥ 200 ms spun)", got, want)
	}
	peak, err := PeakRSS(pid)
	if err != nil || peak <= 0 {
		t.Fatalf("PeakRSS = %d, %v", peak, err)
	}
	if err := ResetPeakRSS(pid); err != nil {
		t.Logf("clear_refs not writable here (%v): peaks are lifetime peaks", err)
	}
}

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\tx\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n")
	if got, err := statusKB(status, "VmHWM"); err != nil || got != 2048 {
		t.Errorf("VmHWM = %d, %v; want 2048", got, err)
	}
	if _, err := statusKB(status, "VmSwap"); err == nil {
		t.Error("a missing field must be an error, not 0")
	}
}

func TestMetricValue(t *testing.T) {
	text := []byte("# HELP go_memstats_alloc_bytes_total x\n# TYPE go_memstats_alloc_bytes_total counter\n" +
		"go_memstats_alloc_bytes 123\ngo_memstats_alloc_bytes_total 4.5e+07\n")
	if got, err := metricValue(text, "go_memstats_alloc_bytes_total"); err != nil || got != 4.5e7 {
		t.Errorf("got %v, %v; want 4.5e7 (the _total sample, not its prefix go_memstats_alloc_bytes)", got, err)
	}
	if _, err := metricValue(text, "nope"); err == nil {
		t.Error("a missing sample must be an error")
	}
}

// TestNewCallSpread sends calls over 4 real client connections to one
// gRPC server and checks, by the peer address each call arrived from, that
// they are spread evenly over all four.
func TestNewCallSpread(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if p, ok := peer.FromContext(ctx); ok {
			mu.Lock()
			seen[p.Addr.String()]++
			mu.Unlock()
		}
		return h(ctx, req)
	}))
	gatewayv1.RegisterToolBackendServiceServer(srv, NewBackend())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	defer func() { srv.Stop(); <-done }()
	var ccs []grpc.ClientConnInterface
	for range 4 {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ccs = append(ccs, cc)
	}
	body, err := RequestBytes(PayloadClean)
	if err != nil {
		t.Fatal(err)
	}
	call := NewCallSpread(ccs, gatewayv1.ToolBackendService_Invoke_FullMethodName, body)
	for range 40 {
		if err := call(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("calls came from %d connections, want 4: %v", len(seen), seen)
	}
	for addr, n := range seen {
		if n != 10 {
			t.Errorf("connection %s carried %d calls, want 10 (round-robin)", addr, n)
		}
	}
}
