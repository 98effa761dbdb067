package server_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
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

// TestAccessLogLevels: an OK call is logged at DEBUG only; a failed call is
// logged at its level with the middleware's fields, the stages' fields and
// a real duration, whether or not DEBUG is on.
func TestAccessLogLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		level  slog.Level
		wantOK bool
		reason string
	}{
		{"info", slog.LevelInfo, false, "at INFO an OK call writes no line (and skips the middleware)"},
		{"debug", slog.LevelDebug, true, "at DEBUG every call is logged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf accessLogBuffer
			env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) {
				c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
			}))
			if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t"}), CallId: "log-ok",
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"tags": "x"}), CallId: "log-bad",
			}); err == nil {
				t.Fatal("invalid call succeeded")
			}
			var okLine, badLine string
			for _, l := range strings.Split(buf.String(), "\n") {
				if !strings.Contains(l, `msg="finished call"`) {
					continue
				}
				switch {
				case strings.Contains(l, "flowdrop.call_id=log-ok"):
					okLine = l
				case strings.Contains(l, "flowdrop.call_id=log-bad"):
					badLine = l
				}
			}
			if (okLine != "") != tc.wantOK {
				t.Errorf("OK call line = %q, want present=%v (%s)", okLine, tc.wantOK, tc.reason)
			}
			if tc.wantOK && !strings.Contains(okLine, "level=DEBUG") {
				t.Errorf("OK call line %q: want level=DEBUG", okLine)
			}
			for _, want := range []string{"level=INFO", "grpc.code=InvalidArgument", "grpc.method=InvokeTool", "flowdrop.tool=create_note", "grpc.error=", "peer.address=", "grpc.time_ms="} {
				if !strings.Contains(badLine, want) {
					t.Errorf("failed call line %q lacks %s", badLine, want)
				}
			}
			if strings.Contains(badLine, "grpc.time_ms=0 ") {
				t.Errorf("failed call line %q: duration is the replay's, not the call's", badLine)
			}
		})
	}
}
