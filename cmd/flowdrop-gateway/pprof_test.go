package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestStartPprof(t *testing.T) {
	if _, err := startPprof("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("non-loopback address: err = %v, want a refusal naming loopback", err)
	}
	stop, err := startPprof("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	// Pick a free loopback port, then serve pprof on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err = startPprof(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/ = %d, want the pprof index", resp.StatusCode)
	}
}
