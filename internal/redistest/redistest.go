// Package redistest starts a real redis-server from PATH for tests: on a
// free 127.0.0.1 port, no persistence, data in t.TempDir(). It can be
// stopped and started again on the same port, so tests can exercise a
// Redis outage and recovery. Without redis-server on PATH the test is
// skipped, except under CI=true, where it fails (.ci/run installs it).
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyTimeout bounds waiting for the server to accept connections: a
// guard against hanging, not a speed claim.
const readyTimeout = 15 * time.Second

// Server is one redis-server process.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	pass string
	// args are extra redis-server arguments (WithArgs); conf, when set, is
	// written to dir/redis.conf and given first (Sentinel needs a file it
	// can rewrite).
	args []string
	conf string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// Option configures Start.
type Option func(*Server)

// WithPassword makes the server require password (requirepass): the
// default user's password, AUTH for every connection.
func WithPassword(password string) Option { return func(s *Server) { s.pass = password } }

// WithArgs gives redis-server more arguments (e.g. --replicaof).
func WithArgs(args ...string) Option { return func(s *Server) { s.args = append(s.args, args...) } }

// withConfig starts redis-server on a configuration file holding conf
// (the port line is added), which the server may rewrite.
func withConfig(conf string) Option { return func(s *Server) { s.conf = conf } }

// Start starts redis-server and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-server is not on PATH (CI installs it: apt-get install -y redis-server)")
		}
		t.Skip("redistest: redis-server is not on PATH (apt-get install -y redis-server)")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	var lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("redistest: pick a port: %v", err)
		}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: start: %v", lastErr)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is host:port, stable across Stop and Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		file := s.dir + "/redis.conf"
		if err := os.WriteFile(file, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n%s", s.port, s.dir, s.conf)), 0o600); err != nil {
			return err
		}
		args = append(args, file)
	}
	args = append(args, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--protected-mode", "yes", "--loglevel", "warning")
	if s.pass != "" {
		args = append(args, "--requirepass", s.pass)
	}
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited while starting: %v", err)
		default:
		}
		if ping(s.Addr()) == nil {
			s.mu.Lock()
			s.cmd = cmd
			s.mu.Unlock()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server not ready after %s", readyTimeout)
}

// ping sends PING in RESP and waits for +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Stop kills the server (no graceful save: the data is not kept); a no-op
// when stopped. It returns once the port no longer answers.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	for range 250 {
		if ping(s.Addr()) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts the stopped server again on the same port (empty).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for range 10 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart: %v", err)
}
