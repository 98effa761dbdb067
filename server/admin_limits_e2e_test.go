package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
)

// TestAdminListenerIdleTimeoutAndCap: the admin listener has the MCP
// listener's idle timeout and connection cap (issue 28 item 13: on main
// 1,000 idle keep-alive connections stayed open 150 s, and there was no
// cap). 1,000 connections each get /healthz and then sit idle: a 1,001st
// is not served while they hold the cap, every one of them is closed by
// the gateway once the idle timeout passes, and then the waiting one is
// served.
func TestAdminListenerIdleTimeoutAndCap(t *testing.T) {
	t.Parallel()
	// 15 s idle: opening 1,000 connections took over 5 s on the loaded CI machine.
	const conns, idle = 1000, 15 * time.Second
	env := gatewaytest.Start(t, gatewaytest.WithAdmin(), gatewaytest.WithConfig(func(c *server.Config) {
		c.MCP.HTTP.IdleTimeout, c.MCP.HTTP.MaxConnections = idle, conns
	}))
	addr := strings.TrimPrefix(env.AdminURL, "http://")
	get := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	firstRequest := time.Now()
	holders := make([]net.Conn, conns)
	readers := make([]*bufio.Reader, conns)
	for i := range holders {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		holders[i], readers[i] = c, bufio.NewReader(c)
		if code := roundTrip(t, c, readers[i], get); code != http.StatusOK {
			t.Fatalf("connection %d: /healthz %d", i, code)
		}
	}
	idleSince := time.Now() // the last one's idle time starts here
	if took := idleSince.Sub(firstRequest); took > idle-2*time.Second {
		t.Fatalf("opening %d connections took %v: too slow to see them all idle at once (idle timeout %v)", conns, took, idle)
	}

	waiting, err := net.Dial("tcp", addr) // accepted by the kernel, not yet by the gateway
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if _, err := io.WriteString(waiting, get); err != nil {
		t.Fatal(err)
	}
	waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := waiting.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection over the cap of %d was served (read %d, %v)", conns, n, err)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for i, c := range holders {
		wg.Go(func() {
			c.SetReadDeadline(idleSince.Add(idle + 3*time.Second))
			if _, err := readers[i].ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if open > 0 {
		t.Fatalf("%d of %d idle connections were still open %v after the idle timeout (%v)", open, conns, time.Since(idleSince)-idle, idle)
	}
	waiting.SetReadDeadline(time.Now().Add(10 * time.Second))
	if code := readStatus(t, bufio.NewReader(waiting)); code != http.StatusOK {
		t.Fatalf("the waiting connection got %d once the idle ones were closed, want 200", code)
	}
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, req string) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return readStatus(t, r)
}

func readStatus(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(fmt.Errorf("no response: %w", err))
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
