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
