package main

import (
	"io"
	"strings"
	"testing"
)

func TestBadInputIsNamed(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   string
		reason string
	}{
		{[]string{"drive", "--target", "gateway", "--addr", "10.0.0.1:7443"}, `--addr "10.0.0.1:7443": host must be a loopback IP`, "load must never leave the machine"},
		{[]string{"drive", "--target", "gateway", "--addr", "localhost:7443"}, "host must be a loopback IP", "a name could resolve anywhere; only IP literals"},
		{[]string{"drive", "--target", "nope", "--addr", "127.0.0.1:1"}, `unknown target "nope"`, "the target list is closed"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--payload", "x"}, `unknown payload "x"`, "payload kinds are closed"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--mode", "burst"}, `--mode "burst"`, "only closed and open loops exist"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--mode", "open", "--rate", "0"}, "--rate 0", "an open loop needs a positive rate"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--duration", "0s"}, "--duration 0s", "every run must be bounded and non-empty"},
		{[]string{"backend", "--listen", "0.0.0.0:7001"}, `--listen "0.0.0.0:7001"`, "servers bind loopback only"},
		{[]string{"backend", "--listen", "127.0.0.1:0", "--delay", "-1s"}, "--delay -1s", "a backend cannot answer before it is asked"},
		{[]string{"wait", "--target", "direct", "--addr", "127.0.0.1:1", "--call-timeout", "0s"}, "--call-timeout 0s", "an attempt needs time to succeed"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--backend", "example.com:1"}, `--backend "example.com:1"`, "the proxy forwards to loopback only"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--conns", "0"}, "--conns 0", "calls need at least one connection"},
		{[]string{"drive", "--face", "mcp", "--url", "http://10.0.0.1:1/mcp"}, "host must be a loopback IP", "MCP load stays on the machine too"},
		{[]string{"drive", "--face", "mcp", "--url", "https://127.0.0.1:1/mcp"}, `--url "https://127.0.0.1:1/mcp"`, "the driver speaks plain HTTP/1.1 on loopback"},
		{[]string{"drive", "--face", "mcp", "--url", "http://127.0.0.1:1/mcp", "--expect", "anything"}, `--expect "anything"`, "every answer is checked against a known value"},
		{[]string{"drive", "--face", "mcp", "--url", "http://127.0.0.1:1/mcp", "--payload", "repair"}, "clean payload only", "a repaired echo differs from what was sent"},
		{[]string{"drive", "--face", "mcp", "--url", "http://127.0.0.1:1/mcp", "--mode", "open"}, "closed loop only", "one session per worker has no open-loop meaning"},
		{[]string{"drive", "--face", "soap"}, `--face "soap"`, "the faces are grpc and mcp"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--pid", "12,x"}, `--pid "12,x"`, "process ids are numbers"},
		{[]string{"drive", "--target", "direct", "--addr", "127.0.0.1:1", "--metrics-url", "http://10.0.0.1:9/metrics"}, "host must be a loopback IP", "scrapes stay on the machine"},
		{[]string{"mcp-upstream", "--listen", "127.0.0.1:0", "--stats-listen", "0.0.0.0:1"}, `--stats-listen "0.0.0.0:1"`, "the upstream binds loopback only"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "typos are reported, not ignored"},
	} {
		err := run(tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want error containing %q (%s)", tc.args, err, tc.want, tc.reason)
		}
	}
}
