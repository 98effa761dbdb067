package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// accessLogBuffer is a bytes.Buffer safe for the server's goroutines.
type accessLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *accessLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *accessLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// accessLines are the "finished call" records in buf (a JSON handler's
// output), each as its fields.
func (s *accessLogBuffer) accessLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(s.String(), "\n") {
		if l == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["msg"] == "finished call" {
			out = append(out, rec)
		}
	}
	return out
}

// line is the one access line whose key has value ("" and t.Errorf when
// there is none or more than one), so each assertion names its call.
func (s *accessLogBuffer) line(t *testing.T, key, value string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, rec := range s.accessLines(t) {
		if rec[key] == value {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Errorf("%d access lines with %s=%s, want 1; log:\n%s", len(found), key, value, s.String())
		return nil
	}
	return found[0]
}

// jsonLogger logs JSON at level into buf.
func jsonLogger(buf *accessLogBuffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level}))
}

// TestAccessLogLevels: on both faces a successful call is logged at INFO by
// default and at DEBUG with OKCallsLevel DEBUG (--log-ok-calls=debug),
// where a log at INFO then has no line for it; a failed call is logged at
// its level, with the caller, the reason and a real duration, whatever
// OKCallsLevel says.
func TestAccessLogLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		logLevel, okAt slog.Level
		wantOK         string // the OK lines' level; "" none
		reason         string
	}{
		{"default", slog.LevelInfo, slog.LevelInfo, "INFO", "successful calls are logged at INFO by default, on both faces"},
		{"ok-at-debug", slog.LevelInfo, slog.LevelDebug, "", "--log-ok-calls=debug keeps OK lines off an INFO log (the gRPC face skips the middleware)"},
		{"ok-at-debug-log-debug", slog.LevelDebug, slog.LevelDebug, "DEBUG", "at DEBUG they are back, at DEBUG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf accessLogBuffer
			env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
				c.Logger = jsonLogger(&buf, tc.logLevel)
				c.OKCallsLevel = tc.okAt
			}))
			ctx := testCtx(t)
			if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t"}), CallId: "grpc-ok",
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"tags": "x"}), CallId: "grpc-bad",
			}); err == nil {
				t.Fatal("invalid call succeeded")
			}
			cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
			for _, c := range []struct{ id, args string }{{"mcp-ok", `{"title":"t"}`}, {"mcp-bad", `{"tags":"x"}`}} {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(c.args),
					Meta: mcp.Meta{mcpapi.MCPMetaCallID: c.id}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"grpc-ok", "mcp-ok"} {
				var lines int
				for _, rec := range buf.accessLines(t) {
					if rec["flowdrop.call_id"] == id {
						lines++
						if rec["level"] != tc.wantOK {
							t.Errorf("%s line at %v, want %s (%s)", id, rec["level"], tc.wantOK, tc.reason)
						}
					}
				}
				if want := map[bool]int{true: 1, false: 0}[tc.wantOK != ""]; lines != want {
					t.Errorf("%d lines for %s, want %d (%s)", lines, id, want, tc.reason)
				}
			}
			if tc.wantOK != "" {
				ok := buf.line(t, "flowdrop.call_id", "grpc-ok")
				for k, want := range map[string]any{"grpc.code": "OK", "flowdrop.caller": "anonymous", "flowdrop.caller_method": "none", "flowdrop.tool": "create_note"} {
					if ok != nil && ok[k] != want {
						t.Errorf("gRPC OK line: %s = %v, want %v", k, ok[k], want)
					}
				}
			}
			bad := buf.line(t, "flowdrop.call_id", "grpc-bad")
			for k, want := range map[string]any{"level": "INFO", "grpc.code": "InvalidArgument", "grpc.method": "InvokeTool", "flowdrop.tool": "create_note",
				"flowdrop.caller": "anonymous", "flowdrop.reason": "arguments-invalid"} {
				if bad != nil && bad[k] != want {
					t.Errorf("gRPC failed line: %s = %v, want %v", k, bad[k], want)
				}
			}
			for _, k := range []string{"grpc.error", "peer.address", "grpc.time_ms"} {
				if bad != nil && bad[k] == nil {
					t.Errorf("gRPC failed line lacks %s: %v", k, bad)
				}
			}
			if bad != nil && bad["grpc.time_ms"] == "0" {
				t.Errorf("gRPC failed line %v: duration is the replay's, not the call's", bad)
			}
			mbad := buf.line(t, "flowdrop.call_id", "mcp-bad")
			for k, want := range map[string]any{"level": "INFO", "protocol": "mcp", "mcp.method": "tools/call", "flowdrop.outcome": "tool-error",
				"flowdrop.code": "InvalidArgument", "flowdrop.reason": "arguments-invalid", "flowdrop.caller": "anonymous"} {
				if mbad != nil && mbad[k] != want {
					t.Errorf("MCP failed line: %s = %v, want %v", k, mbad[k], want)
				}
			}
		})
	}
}
