package loadgen

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startEcho serves an EchoUpstream on loopback, its listener counted.
func startEcho(t *testing.T) (*EchoUpstream, string) {
	t.Helper()
	up := NewEchoUpstream()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(up.Handler())
	srv.Listener = up.CountAccepts(lis)
	srv.Start()
	t.Cleanup(srv.Close)
	return up, srv.URL + "/mcp"
}

func echoConfig(t *testing.T, url string, sessions int) MCPConfig {
	t.Helper()
	args, err := MCPArguments(PayloadClean)
	if err != nil {
		t.Fatal(err)
	}
	text, err := EchoText(args)
	if err != nil {
		t.Fatal(err)
	}
	return MCPConfig{URL: url, Tool: EchoTool, Arguments: args, Expect: json.RawMessage(text), Sessions: sessions}
}

// TestMCPTargetAgainstGoSDK drives real go-sdk servers (the bench's echo
// upstream, and go-sdk servers answering in plain JSON and statelessly) and
// checks every answer is read and checked, sessions are kept on their
// connections, and a wrong answer is an error.
func TestMCPTargetAgainstGoSDK(t *testing.T) {
	ctx := context.Background()
	args, _ := MCPArguments(PayloadClean)
	// A go-sdk server whose echo tool answers with what the driver is told
	// to expect, under the streamable options of the row.
	sdkServer := func(t *testing.T, opts *mcp.StreamableHTTPOptions) string {
		up := NewEchoUpstream()
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: EchoTool, InputSchema: BenchToolSchema()}, up.echo)
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	for _, tc := range []struct {
		name   string
		url    func(t *testing.T) string
		reason string
	}{
		{"echo upstream (SSE answers, stateful)", func(t *testing.T) string { _, u := startEcho(t); return u },
			"the harness's upstream: answers arrive as an event stream on a session"},
		{"JSON answers", func(t *testing.T) string { return sdkServer(t, &mcp.StreamableHTTPOptions{JSONResponse: true}) },
			"a server answering application/json must be read as well"},
		{"stateless", func(t *testing.T) string { return sdkServer(t, &mcp.StreamableHTTPOptions{Stateless: true}) },
			"no Mcp-Session-Id (the gateway's face, mcp-proxy): the driver must not need one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := NewMCPTarget(ctx, echoConfig(t, tc.url(t), 4))
			if err != nil {
				t.Fatalf("%v (%s)", err, tc.reason)
			}
			defer target.Close()
			st, err := RunClosed(ctx, ClosedConfig{Concurrency: 4, Duration: 200 * time.Millisecond, CallTimeout: 5 * time.Second}, target.Call)
			if err != nil {
				t.Fatal(err)
			}
			if st.Calls == 0 || st.Errors != 0 {
				t.Fatalf("%d calls, %d errors (first: %s), want some and none (%s)", st.Calls, st.Errors, st.FirstError, tc.reason)
			}
		})
	}

	t.Run("a wrong answer is an error", func(t *testing.T) {
		_, url := startEcho(t)
		cfg := echoConfig(t, url, 1)
		cfg.Expect = json.RawMessage(`{"status":"ok"}`)
		target, err := NewMCPTarget(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer target.Close()
		if err := target.Call(ctx); err == nil || !strings.Contains(err.Error(), "answer differs") {
			t.Fatalf("err = %v, want the answer reported as different", err)
		}
	})

	t.Run("an unknown tool is an error", func(t *testing.T) {
		_, url := startEcho(t)
		cfg := echoConfig(t, url, 1)
		cfg.Tool = "nope"
		target, err := NewMCPTarget(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer target.Close()
		if err := target.Call(ctx); err == nil {
			t.Fatal("calling an unknown tool succeeded")
		}
	})

	t.Run("equal JSON spelt differently passes", func(t *testing.T) {
		_, url := startEcho(t)
		cfg := echoConfig(t, url, 1)
		// Same value, other key order and spacing: not byte-equal to the
		// echo's canonical text, equal as JSON.
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			t.Fatal(err)
		}
		cfg.Expect, _ = json.MarshalIndent(m, "", "  ")
		target, err := NewMCPTarget(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer target.Close()
		if err := target.Call(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("sessions keep their connections", func(t *testing.T) {
		up, url := startEcho(t)
		target, err := NewMCPTarget(ctx, echoConfig(t, url, 8))
		if err != nil {
			t.Fatal(err)
		}
		defer target.Close()
		before := up.Stats()
		// Runs until at least 50 calls are made, however slow the machine:
		// the count, not the time, is what the check needs.
		var calls int64
		for run := 0; calls < 50 && run < 100; run++ {
			st, err := RunClosed(ctx, ClosedConfig{Concurrency: 8, Duration: 100 * time.Millisecond, CallTimeout: 5 * time.Second}, target.Call)
			if err != nil || st.Errors != 0 {
				t.Fatalf("run: %v, %d errors (%s)", err, st.Errors, st.FirstError)
			}
			calls += st.Calls
		}
		after := up.Stats()
		// The sessions share one pool of at most 16 idle connections
		// (twice the sessions). Net/http hands a connection coming back to
		// a request still waiting for its own dial, whose dial then lands
		// in the pool as a spare: opening 8 sessions at once may leave 9
		// or more connections, and a run whose start had fewer than 8 may
		// dial a spare the same way. None of that grows with calls; an
		// answer left unread costs a connection a call (~150 here), which
		// no count within the pool's bound can hide.
		if after.Accepted > 16 || before.Accepted < 1 || calls < 50 {
			t.Errorf("%d connections before the runs and %d after them (%d calls), want at most 16 in all: connections kept, not one a call",
				before.Accepted, after.Accepted, calls)
		}
		if got := after.Calls - before.Calls; got != calls {
			t.Errorf("upstream answered %d calls, driver counted %d", got, calls)
		}
	})
}

func TestMCPConfigRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mut    func(*MCPConfig)
		reason string
	}{
		{"no sessions", func(c *MCPConfig) { c.Sessions = 0 }, "a closed loop needs a session per worker"},
		{"expect not JSON", func(c *MCPConfig) { c.Expect = json.RawMessage("{") }, "an answer can only be checked against a JSON value"},
		{"arguments not an object", func(c *MCPConfig) { c.Arguments = json.RawMessage("[1]") }, "tools/call arguments are an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := MCPConfig{URL: "http://127.0.0.1:1/mcp", Tool: EchoTool, Arguments: json.RawMessage(`{}`), Expect: json.RawMessage(`{}`), Sessions: 1}
			tc.mut(&cfg)
			if _, err := NewMCPTarget(context.Background(), cfg); err == nil {
				t.Errorf("NewMCPTarget accepted it (%s)", tc.reason)
			}
		})
	}
}
