package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/server/observe"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewcomerPath runs the binary's run() the way `go run
// ./cmd/flowdrop-gateway` does (demo on, only the port changed), makes the
// call the banner prints, then stops it like SIGINT would.
func TestNewcomerPath(t *testing.T) {
	// A fresh working directory: the default bolt store goes to
	// ./flowdrop-data, which must be created on first run.
	wd := t.TempDir()
	t.Chdir(wd)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--log-level", "error"}, pw, io.Discard)
		pw.Close()
	}()

	// Read the banner: the listen address and the grpcurl line's request.
	var addr, request string
	sc := bufio.NewScanner(pr)
	for sc.Scan() && (addr == "" || request == "") {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "flowdrop gateway listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
		if strings.Contains(line, "grpcurl") {
			_, after, _ := strings.Cut(line, "-d '")
			request, _, _ = strings.Cut(after, "' ")
		}
	}
	go io.Copy(io.Discard, pr) // keep draining whatever follows
	if addr == "" || request == "" {
		t.Fatalf("banner lacks the address or the example call (addr=%q request=%q)", addr, request)
	}

	// The ready-to-paste call works as printed.
	req := &gatewayv1.InvokeToolRequest{}
	if err := protojson.Unmarshal([]byte(request), req); err != nil {
		t.Fatalf("banner request %q is not a valid InvokeToolRequest: %v", request, err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	resp, err := gatewayv1.NewToolGatewayServiceClient(conn).InvokeTool(cctx, req)
	if err != nil {
		t.Fatalf("the banner's call failed: %v", err)
	}
	got := resp.GetResult().GetStructValue().GetFields()["arguments"].GetStructValue().GetFields()["title"].GetStringValue()
	if got != "Ember & Oak" || len(resp.GetRepairs()) != 2 {
		t.Errorf("title reached the tool as %q with %d repairs; want \"Ember & Oak\" with 2", got, len(resp.GetRepairs()))
	}

	cancel() // what SIGINT does through signal.NotifyContext
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d after shutdown, want 0", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not shut down")
	}
	if _, err := os.Stat(filepath.Join(wd, "flowdrop-data", "registry.db")); err != nil {
		t.Errorf("default store file: %v; want ./flowdrop-data/registry.db", err)
	}
}

func TestStartupErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // rows that get as far as the default store keep it here
	badPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("auth: {mode: on}\nrulez: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  - name: broken\n    backend: 127.0.0.1:7001\n    input_schema: {type: array}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		reason     string
		args       []string
		code       int
		wantStderr []string
	}{
		{name: "bad-tools-file", reason: "a bad file stops start-up naming the tool and the problem",
			args: []string{"--listen", "127.0.0.1:0", "--auth-off", "--admin-listen", "", "--tools", bad}, code: 1, wantStderr: []string{`"broken"`, "input_schema", "object"}},
		{name: "missing-tools-file", reason: "a missing file is named",
			args: []string{"--listen", "127.0.0.1:0", "--auth-off", "--admin-listen", "", "--tools", filepath.Join(dir, "nope.yaml")}, code: 1, wantStderr: []string{"nope.yaml"}},
		{name: "tools-without-auth-decision", reason: "serving a tools file needs --policy or an explicit --auth-off",
			args: []string{"--listen", "127.0.0.1:0", "--tools", bad}, code: 2, wantStderr: []string{"--policy FILE", "--auth-off"}},
		{name: "policy-and-auth-off", reason: "the two would contradict each other",
			args: []string{"--policy", badPolicy, "--auth-off"}, code: 2, wantStderr: []string{"--policy and --auth-off"}},
		{name: "bad-policy-file", reason: "a policy file with a typo is refused naming the key and the file",
			args: []string{"--policy", badPolicy}, code: 2, wantStderr: []string{"rulez", "policy.yaml"}},
		{name: "bad-listen", reason: "a listen address without a port is a usage error",
			args: []string{"--listen", "localhost"}, code: 2, wantStderr: []string{"listen address"}},
		{name: "no-tools", reason: "--demo=false without --tools leaves a memory store with nothing to serve",
			args: []string{"--demo=false", "--store", "memory"}, code: 2, wantStderr: []string{"no tools"}},
		{name: "bad-store", reason: "an unknown store kind is named with the choices",
			args: []string{"--store", "disk"}, code: 2, wantStderr: []string{`unknown kind "disk"`, "bolt, etcd or memory"}},
		{name: "etcd-without-endpoints", reason: "--store etcd needs --etcd-endpoints",
			args: []string{"--store", "etcd"}, code: 2, wantStderr: []string{"etcd endpoints: none given"}},
		{name: "bad-etcd-endpoint", reason: "each comma-separated endpoint is checked and named",
			args: []string{"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379,,ftp://x:1"}, code: 2,
			wantStderr: []string{`endpoint "": empty`, `"ftp://x:1"`}},
		{name: "bad-etcd-prefix", reason: "the registry must not own etcd's whole key space",
			args: []string{"--store", "etcd", "--etcd-endpoints", "127.0.0.1:2379", "--etcd-prefix", "/"}, code: 2,
			wantStderr: []string{`etcd prefix "/"`}},
		{name: "bad-eject-percent", reason: "ejecting every replica of a backend is never allowed, so the share is 1..100 %",
			args: []string{"--backend-eject-max-percent", "0"}, code: 2, wantStderr: []string{"backend ejection max percent", "got 0"}},
		{name: "bad-eject-times", reason: "the longest ejection cannot be shorter than the first",
			args: []string{"--backend-eject-base", "1m", "--backend-eject-max", "30s"}, code: 2, wantStderr: []string{"backend ejection times"}},
		{name: "negative-etcd-reconnect", reason: "a negative back-off cap is a mistake, not the default",
			args: []string{"--store", "etcd", "--etcd-endpoints", "127.0.0.1:2379", "--etcd-reconnect-max-delay", "-1s"}, code: 2,
			wantStderr: []string{"etcd reconnect max delay must not be negative"}},
		{name: "empty-data-dir", reason: "the bolt store needs a directory",
			args: []string{"--data-dir", ""}, code: 2, wantStderr: []string{"data directory is empty"}},
		{name: "stray-argument", reason: "positional arguments are refused, not ignored",
			args: []string{"extra"}, code: 2, wantStderr: []string{"unexpected arguments"}},
		{name: "bad-log-level", reason: "an unknown log level is named",
			args: []string{"--log-level", "loud"}, code: 2, wantStderr: []string{"--log-level"}},
		{name: "bad-log-ok-calls", reason: "successful calls are logged at info or debug, nothing else",
			args: []string{"--log-ok-calls", "warn"}, code: 2, wantStderr: []string{"--log-ok-calls", "want info or debug"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			if code := run(ctx, tc.args, io.Discard, &stderr); code != tc.code {
				t.Fatalf("exit code %d, want %d (%s); stderr: %s", code, tc.code, tc.reason, &stderr)
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr %q lacks %q (%s)", &stderr, s, tc.reason)
				}
			}
		})
	}
}

// TestVersion: --version prints the build and exits 0, starting nothing.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "flowdrop-gateway ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestLogFormat: --log-format json makes every log line one JSON object;
// an unknown format is a usage error.
func TestLogFormat(t *testing.T) {
	var errb bytes.Buffer
	cfg, _, err := parseFlags([]string{"--auth-off", "--log-format", "json"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Info("hello", "k", "v", "took", 1500*time.Millisecond, slog.Group("g", "wait", 2*time.Second))
	var rec map[string]any
	if err := json.Unmarshal(errb.Bytes(), &rec); err != nil || rec["msg"] != "hello" || rec["k"] != "v" {
		t.Errorf("--log-format json line %q: %v", errb.String(), err)
	}
	if g, _ := rec["g"].(map[string]any); rec["took"] != "1.5s" || g["wait"] != "2s" {
		t.Errorf("--log-format json line %q: durations want \"1.5s\" and \"2s\" (text, not nanoseconds)", errb.String())
	}
	if _, _, err := parseFlags([]string{"--auth-off", "--log-format", "xml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format xml: %v; want a usage error naming the flag", err)
	}
}

// TestDroppedLogLinesNote: when the batched log drops lines (its output
// did not keep up), the line saying how many is in the log's format.
func TestDroppedLogLinesNote(t *testing.T) {
	for _, tc := range []struct {
		reason, format string
		parse          func(string) (level, msg, dropped string, ok bool)
	}{
		{"a JSON log stays one JSON object per line", "json", func(l string) (string, string, string, bool) {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) != nil {
				return "", "", "", false
			}
			level, _ := rec["level"].(string)
			msg, _ := rec["msg"].(string)
			d, _ := rec["dropped"].(float64)
			return level, msg, strconv.Itoa(int(d)), true
		}},
		{"a text log stays key=value", "text", func(l string) (string, string, string, bool) {
			const want = ` level=WARN msg="log lines dropped: the log output did not keep up" dropped=`
			_, rest, ok := strings.Cut(l, want)
			return "WARN", "log lines dropped", rest, ok && strings.HasPrefix(l, "time=")
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			// MaxBytes 1: every line is dropped; nothing is written before Close.
			lw := observe.NewLogWriter(&out, observe.LogWriterOptions{FlushEvery: time.Hour, FlushBytes: 1 << 20, MaxBytes: 1})
			cfg, _, err := parseFlags([]string{"--auth-off", "--log-format", tc.format}, lw)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Logger.Info("one")
			cfg.Logger.Info("two")
			lw.Close()
			level, msg, dropped, ok := tc.parse(strings.TrimSuffix(out.String(), "\n"))
			if !ok || strings.Count(out.String(), "\n") != 1 || level != "WARN" || !strings.Contains(msg, "log lines dropped") || dropped != "2" {
				t.Fatalf("%s: output %q: level %q msg %q dropped %q", tc.reason, out.String(), level, msg, dropped)
			}
		})
	}
}

// TestLogOKCallsFlag: successful calls' access lines are at INFO unless
// --log-ok-calls=debug turns them down (the gateway's Config says so).
func TestLogOKCallsFlag(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		args         []string
		want         slog.Level
	}{
		{"default", "every call is a line at the default log level", nil, slog.LevelInfo},
		{"debug", "a busy gateway may keep OK lines off its default log", []string{"--log-ok-calls", "debug"}, slog.LevelDebug},
		{"info", "the default written out", []string{"--log-ok-calls=info"}, slog.LevelInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseFlags(append([]string{"--auth-off"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OKCallsLevel != tc.want {
				t.Errorf("OKCallsLevel = %v, want %v (%s)", cfg.OKCallsLevel, tc.want, tc.reason)
			}
		})
	}
}

// TestHelpGroupsEveryFlag: --help lists every flag once, under a group.
func TestHelpGroupsEveryFlag(t *testing.T) {
	var errb bytes.Buffer
	if _, _, err := parseFlags([]string{"-h"}, &errb); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	help := errb.String()
	if strings.Contains(help, "\nother:\n") {
		t.Errorf("flags without a group in --help (add them to flagGroups):\n%s", help[strings.Index(help, "\nother:\n"):])
	}
	seen := map[string]int{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			seen[n]++
		}
	}
	for n, c := range seen {
		if c > 1 {
			t.Errorf("--%s is in %d groups", n, c)
		}
		if !strings.Contains(help, "  --"+n+"\n") && !strings.Contains(help, "  --"+n+" ") {
			t.Errorf("--%s is grouped but not a flag (or not shown)", n)
		}
	}
}
