package main

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// lineLog collects a subprocess's output lines and says when one matches.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func (l *lineLog) read(sc *bufio.Scanner) {
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
		select {
		case l.added <- struct{}{}:
		default:
		}
	}
}

// wait returns the first line containing s, waiting up to d for it.
func (l *lineLog) wait(s string, d time.Duration) (string, bool) {
	deadline := time.After(d)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return line, true
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline:
			return "", false
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestSIGHUPDoesNotKill builds the binary, runs it without a policy file,
// and sends it SIGHUP (which by default kills a process on the spot): it
// logs a WARN line saying there is nothing to reload and keeps serving;
// SIGTERM then drains and exits 0.
func TestSIGHUPDoesNotKill(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flowdrop-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--admin-listen", "", "--mcp-listen", "", "--store", "memory")
	cmd.Dir = t.TempDir()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	out := &lineLog{added: make(chan struct{}, 1)}
	logs := &lineLog{added: make(chan struct{}, 1)}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); out.read(bufio.NewScanner(stdout)) }()
	go func() { defer readers.Done(); logs.read(bufio.NewScanner(stderr)) }()
	go func() { readers.Wait(); exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	banner, ok := out.wait("flowdrop gateway listening on ", 60*time.Second)
	if !ok {
		t.Fatalf("no banner; stderr:\n%s", logs)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(banner[strings.Index(banner, "listening on "):], "listening on "), " ")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	serving := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			err = errors.New(resp.GetStatus().String())
		}
		return err
	}
	if err := serving(); err != nil {
		t.Fatalf("health before SIGHUP: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	line, ok := logs.wait("SIGHUP received", 10*time.Second)
	if !ok {
		t.Fatalf("no log line for SIGHUP; stderr:\n%s", logs)
	}
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "nothing to reload") {
		t.Errorf("SIGHUP line %q: want WARN saying there is nothing to reload and nothing changed", line)
	}
	if err := serving(); err != nil {
		t.Fatalf("health after SIGHUP: %v (the gateway must keep serving)", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want status 0; stderr:\n%s", err, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not exit after SIGTERM")
	}
	if _, ok := logs.wait("draining calls in flight", 0); !ok {
		t.Errorf("SIGTERM did not drain; stderr:\n%s", logs)
	}
}
