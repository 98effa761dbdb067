package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/storetest"
)

// Environment of the helper child process.
const (
	envMode = "BOLTSTORE_HELPER_MODE" // "exit", "kill" or "hold"
	envPath = "BOLTSTORE_HELPER_PATH"
	envN    = "BOLTSTORE_HELPER_N"
)

func helperTool(i int) registry.Tool {
	return registry.Tool{
		Name:        fmt.Sprintf("crash-%06d", i),
		Description: fmt.Sprintf("tool %d", i),
		InputSchema: storetest.Schema(10),
		Backend:     "127.0.0.1:7000",
		Timeout:     time.Duration(i) * time.Millisecond,
		Labels:      map[string]string{"i": strconv.Itoa(i)},
	}
}

// TestHelperProcess is not a test: it is the child process of the crash and
// lock tests, re-executed from the test binary.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("helper process for the crash tests")
	}
	s, err := boltstore.Open(os.Getenv(envPath))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	if mode == "hold" {
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold the lock until the parent closes stdin
		_ = s.Close()
		os.Exit(0)
	}
	n, _ := strconv.Atoi(os.Getenv(envN))
	for i := range n {
		got, err := s.Put(context.Background(), helperTool(i), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "put:", err)
			os.Exit(3)
		}
		// os.Stdout is unbuffered: the ack is written only after Put returned.
		fmt.Printf("ack %s %d\n", got.Name, got.Revision)
	}
	// Deliberately no s.Close(): the acknowledged writes must already be durable.
	os.Exit(0)
}

func helperCmd(t *testing.T, mode, path string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envMode+"="+mode, envPath+"="+path, envN+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

type ack struct {
	name string
	rev  int64
}

func parseAck(t *testing.T, line string) (ack, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ack" {
		return ack{}, false // test framework output
	}
	rev, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		t.Fatalf("bad ack line %q", line)
	}
	return ack{f[1], rev}, true
}

// assertAcked reopens the store and checks every acknowledged registration.
func assertAcked(t *testing.T, path string, acks []ack) {
	t.Helper()
	if len(acks) == 0 {
		t.Fatal("the child acknowledged nothing; the test proves nothing")
	}
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s.Close()
	tools, rev, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List after crash: %v", err)
	}
	byName := map[string]registry.Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	for i, a := range acks {
		tool, ok := byName[a.name]
		if !ok {
			t.Errorf("acknowledged %s at revision %d is lost", a.name, a.rev)
			continue
		}
		want := helperTool(i)
		if tool.Revision != a.rev || tool.Name != want.Name || tool.Timeout != want.Timeout ||
			!proto.Equal(tool.InputSchema, want.InputSchema) || tool.Labels["i"] != want.Labels["i"] {
			t.Errorf("tool %s after crash = rev %d timeout %s labels %v; acknowledged rev %d, want timeout %s",
				a.name, tool.Revision, tool.Timeout, tool.Labels, a.rev, want.Timeout)
		}
	}
	if last := acks[len(acks)-1].rev; rev < last {
		t.Errorf("store revision %d after crash is older than the last acknowledged %d", rev, last)
	}
	// The revision counter continues: a new write must not reuse a revision.
	got, err := s.Put(context.Background(), registry.Tool{Name: "after-crash"}, nil)
	if err != nil || got.Revision <= rev {
		t.Errorf("Put after crash = rev %d, %v; want > %d", got.Revision, err, rev)
	}
}

func TestCrashExitWithoutClose(t *testing.T) {
	const n = 200
	path := filepath.Join(t.TempDir(), "registry.db")
	out, err := helperCmd(t, "exit", path, n).Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var acks []ack
	for _, line := range strings.Split(string(out), "\n") {
		if a, ok := parseAck(t, line); ok {
			acks = append(acks, a)
		}
	}
	if len(acks) != n {
		t.Fatalf("child acknowledged %d of %d", len(acks), n)
	}
	assertAcked(t, path, acks)
}

func TestCrashSIGKILLMidStream(t *testing.T) {
	const killAfter = 100
	path := filepath.Join(t.TempDir(), "registry.db")
	// The child would write 1e6 tools; it is killed long before.
	cmd := helperCmd(t, "kill", path, 1_000_000)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		a, ok := parseAck(t, sc.Text())
		if !ok {
			continue
		}
		acks = append(acks, a)
		if len(acks) == killAfter && !killed {
			// Kill while writes are in flight; keep reading what was already acked.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed mid-stream (acks %d, wait %v)", len(acks), err)
	}
	t.Logf("child killed after %d acknowledged registrations", len(acks))
	assertAcked(t, path, acks)
}

func TestSecondProcessFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	cmd := helperCmd(t, "hold", path, 0)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
	}
	_, err = boltstore.Open(path, boltstore.WithOpenTimeout(100*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Open of a file held by another process = %v; want an error naming %s and the lock", err, path)
	}
	// Once the holder closes, the file opens.
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	s, err := boltstore.Open(path, boltstore.WithOpenTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	_ = s.Close()
}

func TestReopenKeepsToolsAndRevision(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "registry.db") // parent directory is created
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Put(ctx, registry.Tool{Name: "a", InputSchema: storetest.Schema(10)}, nil)
	b, _ := s.Put(ctx, registry.Tool{Name: "b"}, nil)
	dr, err := s.Delete(ctx, "b", nil)
	if err != nil || b.Revision == 0 {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, rev, err := s.List(ctx)
	if err != nil || len(tools) != 1 || tools[0].Revision != a.Revision || !proto.Equal(tools[0].InputSchema, a.InputSchema) {
		t.Fatalf("after reopen List = %v, %v; want only a at %d", tools, err, a.Revision)
	}
	if rev != dr {
		t.Errorf("revision after reopen %d, want the last write's %d", rev, dr)
	}
	// History is in memory only: older watches must re-list, current ones work.
	if _, err := s.Watch(ctx, a.Revision); !errors.Is(err, registry.ErrCompacted) {
		t.Errorf("Watch(%d) after reopen = %v, want ErrCompacted", a.Revision, err)
	}
	ch, err := s.Watch(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Put(ctx, registry.Tool{Name: "c"}, nil)
	if ev := <-ch; ev.Tool.Name != "c" || ev.Revision != c.Revision || c.Revision != rev+1 {
		t.Errorf("event after reopen = %+v, want c at %d", ev, rev+1)
	}
}

func TestWatchCompactedBeyondHistory(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.WithHistory(2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var revs []int64
	for i := range 4 {
		got, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%d", i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, got.Revision)
	}
	cases := []struct {
		reason    string
		after     int64
		compacted bool
	}{
		{"the event after 'after' was dropped from the two-event history", revs[1] - 1, true},
		{"both events after 'after' are retained", revs[1], false},
		{"nothing to replay", revs[3], false},
	}
	for _, c := range cases {
		_, err := s.Watch(ctx, c.after)
		if got := errors.Is(err, registry.ErrCompacted); got != c.compacted {
			t.Errorf("Watch(%d) = %v; compacted %v, want %v (%s)", c.after, err, got, c.compacted, c.reason)
		}
	}
}

func TestSlowWatcherIsDropped(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.WithWatchBuffer(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%d", i)}, nil); err != nil {
			t.Fatalf("a writer must not block on a slow watcher: %v", err)
		}
	}
	n := 0
	for range ch {
		n++
	}
	if n != 1 {
		t.Errorf("slow watcher got %d events before its channel closed, want the 1 buffered", n)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Error("watch channel still open after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	checks := map[string]error{}
	_, checks["Get"] = s.Get(ctx, "x")
	_, _, checks["List"] = s.List(ctx)
	_, checks["Put"] = s.Put(ctx, registry.Tool{Name: "x"}, nil)
	_, checks["Delete"] = s.Delete(ctx, "x", nil)
	_, checks["Watch"] = s.Watch(ctx, 0)
	for op, err := range checks {
		if !errors.Is(err, registry.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
}

func TestInvalidName(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var te *registry.ToolError
	for _, name := range []string{"", "a/b", strings.Repeat("x", 65)} {
		if _, err := s.Put(context.Background(), registry.Tool{Name: name}, nil); !errors.As(err, &te) || te.Field != "name" {
			t.Errorf("Put(%q) = %v, want a ToolError on name", name, err)
		}
	}
}

// TestListCorruptRecord: a List decoded on several workers fails on a
// stored record it cannot read with an error naming that tool (the first
// in name order when several are), not a partial list.
func TestListCorruptRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.Put(ctx, registry.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: storetest.Schema(2), Backend: "b:1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("tools"))
		if err := b.Put([]byte("t150"), []byte(`{"v":1,"name":"t150","input_schema":{"type":`)); err != nil {
			return err
		}
		return b.Put([]byte("t299"), []byte(`{"v":77,"name":"t299"}`))
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, _, err := s.List(ctx)
	if err == nil || tools != nil || !strings.Contains(err.Error(), `stored tool "t150"`) {
		t.Fatalf("List = %d tools, %v; want an error naming t150", len(tools), err)
	}
}
