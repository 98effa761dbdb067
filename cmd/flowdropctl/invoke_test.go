package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServeEnv) != "" {
		os.Exit(mcpupstreamtest.ServeStdio()) // the test binary as a stdio MCP server
	}
	goleak.VerifyTestMain(m)
}

func TestInvoke(t *testing.T) {
	env := gatewaytest.Start(t)
	cases := []struct {
		name       string
		reason     string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{
			name:       "repaired-call",
			reason:     "prints the backend's result with the normalized arguments and lists each repair",
			args:       []string{"create_note", "--args", `{"title":"Ember &amp;amp; Oak","tags":"[\"a\",\"b\"]"}`},
			wantStdout: []string{`"title": "Ember & Oak"`, "entities-decoded /title (2 passes)", "json-decoded /tags"},
		},
		{
			name:       "flags-before-tool",
			reason:     "flags may come before TOOL too",
			args:       []string{"--args", `{"title":"x"}`, "--call-id", "c-1", "create_note"},
			wantStdout: []string{`"call_id": "c-1"`, "repairs: none"},
		},
		{
			name:       "invalid-arguments",
			reason:     "an InvalidArgument exits 1 with the code, the message and each field violation",
			args:       []string{"apply_ops", "--args", `{"ops":"{\"op\":\"add\"}"}`},
			wantCode:   1,
			wantStderr: []string{"error: InvalidArgument:", "  /ops: "},
		},
		{
			name:       "unknown-tool",
			reason:     "NotFound exits 1 naming the tool",
			args:       []string{"nope"},
			wantCode:   1,
			wantStderr: []string{`error: NotFound: tool "nope" is not registered`},
		},
		{
			name:       "tool-level-error",
			reason:     "a tool-reported failure prints the result but exits 1 so scripts notice",
			args:       []string{"run_command", "--args", `{"command":"false"}`},
			wantCode:   1,
			wantStdout: []string{"tool reported an error:", "status 1"},
		},
		{
			name:       "inexact-id-judged-by-the-gateway",
			reason:     "--args goes as arguments_json: 2^53+1 reaches the gateway as written and is refused naming /id",
			args:       []string{"create_note", "--args", `{"title":"x","id":9007199254740993}`},
			wantCode:   1,
			wantStderr: []string{"error: InvalidArgument:", "  /id: ", "cannot be represented exactly"},
		},
		{
			name:       "args-struct",
			reason:     "--args-struct sends a Struct, as before arguments_json",
			args:       []string{"create_note", "--args-struct", "--args", `{"title":"x","tags":"[\"a\"]"}`},
			wantStdout: []string{"json-decoded /tags"},
		},
		{
			name:       "bad-args-json",
			reason:     "--args that is not a JSON object is a usage error",
			args:       []string{"create_note", "--args", `[1]`},
			wantCode:   2,
			wantStderr: []string{"--args must be a JSON object"},
		},
		{
			name:       "help",
			reason:     "--help prints the usage and exits 0",
			args:       []string{"--help"},
			wantStderr: []string{"usage: flowdropctl invoke TOOL", "-idempotency-key"},
		},
		{
			name:       "no-tool",
			reason:     "TOOL is required",
			args:       []string{"--args", `{}`},
			wantCode:   2,
			wantStderr: []string{"want exactly one TOOL, got 0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--addr", env.Addr, "--timeout", "10s"}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if code := runInvoke(ctx, args, &stdout, &stderr); code != tc.wantCode {
				t.Fatalf("exit code %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.wantCode, tc.reason, &stdout, &stderr)
			}
			for _, s := range tc.wantStdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q (%s):\n%s", s, tc.reason, &stdout)
				}
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q (%s):\n%s", s, tc.reason, &stderr)
				}
			}
			t.Logf("stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
		})
	}
}

// TestInvokeIdempotencyKey: --idempotency-key reaches the gateway, so a
// second invoke with the same key is answered from the stored result,
// says so, and the backend runs once.
func TestInvokeIdempotencyKey(t *testing.T) {
	env := gatewaytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run := func() string {
		var stdout, stderr bytes.Buffer
		args := []string{"--addr", env.Addr, "create_note", "--args", `{"title":"once"}`, "--idempotency-key", "ctl-key-1"}
		if code := runInvoke(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("exit code %d\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
		}
		return stdout.String()
	}
	if first := run(); strings.Contains(first, "replayed") {
		t.Errorf("first call says replayed:\n%s", first)
	}
	if second := run(); !strings.Contains(second, "replayed: the stored result") {
		t.Errorf("second call with the same key does not say it was replayed:\n%s", second)
	}
	if n := len(env.Backend.CallsFor("create_note")); n != 1 {
		t.Errorf("backend ran create_note %d times, want 1", n)
	}
}
