package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

const reloadTestKey = "fd_reload_invoker_0c9a2e"

// reloadPolicyYAML is a policy file with one API key; rules is its rules
// section (YAML, may be empty).
func reloadPolicyYAML(rules string) string {
	return `auth:
  mode: on
  api_keys:
    - name: invoker
      sha256: "` + policy.HashAPIKey(reloadTestKey) + `"
      roles: [invoker]
authz:
  default: {allow: ["*"]}
admin:
  listen_addr: ""
` + rules
}

const forbiddenRule = `rules:
  - name: no-forbidden-titles
    tools: [create_note]
    expr: '!args.title.startsWith("forbidden")'
`

// writeAtomically saves content as editors do: a new file renamed over
// the old one.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// runningGateway is the built binary, running on 127.0.0.1 with the demo
// tools, a memory store and the given extra flags.
type runningGateway struct {
	cmd    *exec.Cmd
	logs   *lineLog
	client gatewayv1.ToolGatewayServiceClient
}

func startBinary(t *testing.T, args ...string) *runningGateway {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flowdrop-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--mcp-listen", "", "--store", "memory", "--demo"}, args...)...)
	cmd.Dir = t.TempDir()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &lineLog{added: make(chan struct{}, 1)}
	logs := &lineLog{added: make(chan struct{}, 1)}
	exited := make(chan error, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); out.read(bufio.NewScanner(stdout)) }()
	go func() { defer readers.Done(); logs.read(bufio.NewScanner(stderr)) }()
	go func() { readers.Wait(); exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	banner, ok := out.wait("flowdrop gateway listening on ", 60*time.Second)
	if !ok {
		t.Fatalf("no banner; stderr:\n%s", logs)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(banner[strings.Index(banner, "listening on "):], "listening on "), " ")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &runningGateway{cmd: cmd, logs: logs, client: gatewayv1.NewToolGatewayServiceClient(conn)}
}

// call invokes create_note with title and returns its code.
func (r *runningGateway) call(t *testing.T, title string) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-api-key", reloadTestKey), 5*time.Second)
	defer cancel()
	args, _ := structpb.NewStruct(map[string]any{"title": title})
	_, err := r.client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args})
	return status.Code(err)
}

// deniedWithin polls (bounded) until a forbidden title is refused.
func (r *runningGateway) deniedWithin(t *testing.T, d time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r.call(t, "forbidden plans") == codes.PermissionDenied {
			return true
		}
	}
	return false
}

// TestSIGHUPReloadsPolicy: on the built binary with the file watch off, a
// new deny rule written to the policy file is enforced within 1 s of a real
// SIGHUP; a broken edit + SIGHUP is refused with an ERROR line naming the
// problem, and the old policy keeps serving.
func TestSIGHUPReloadsPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeAtomically(t, path, reloadPolicyYAML(""))
	gw := startBinary(t, "--policy", path, "--watch-policy=false")
	if got := gw.call(t, "forbidden plans"); got != codes.OK {
		t.Fatalf("before the reload: %v", got)
	}

	writeAtomically(t, path, reloadPolicyYAML(forbiddenRule))
	if gw.deniedWithin(t, 300*time.Millisecond) {
		t.Fatal("the edit was enforced without SIGHUP, with --watch-policy=false")
	}
	if err := gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !gw.deniedWithin(t, time.Second) {
		t.Fatalf("the new rule was not enforced within 1 s of SIGHUP; stderr:\n%s", gw.logs)
	}
	if _, ok := gw.logs.wait("policy reloaded", 0); !ok {
		t.Errorf("no 'policy reloaded' line; stderr:\n%s", gw.logs)
	}

	writeAtomically(t, path, reloadPolicyYAML(forbiddenRule)+"limits:\n  max_dpth: 3\n")
	if err := gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	line, ok := gw.logs.wait("policy reload refused", 5*time.Second)
	if !ok {
		t.Fatalf("no refusal line for the broken edit; stderr:\n%s", gw.logs)
	}
	if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "max_dpth") {
		t.Errorf("refusal line %q: want ERROR naming the unknown field max_dpth", line)
	}
	if got := gw.call(t, "forbidden plans"); got != codes.PermissionDenied {
		t.Errorf("after the broken edit: %v, want the old policy (its rule) still enforced", got)
	}
	if got := gw.call(t, "plans"); got != codes.OK {
		t.Errorf("after the broken edit, an allowed call: %v", got)
	}
}

// TestPolicyFileWatchReloads: an edit of the policy file, saved by rename
// as editors do, is picked up without a signal.
func TestPolicyFileWatchReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeAtomically(t, path, reloadPolicyYAML(""))
	gw := startBinary(t, "--policy", path)
	if got := gw.call(t, "forbidden plans"); got != codes.OK {
		t.Fatalf("before the edit: %v", got)
	}
	writeAtomically(t, path, reloadPolicyYAML(forbiddenRule))
	if !gw.deniedWithin(t, 2*time.Second) {
		t.Fatalf("the edit was not enforced without a signal; stderr:\n%s", gw.logs)
	}
	if _, ok := gw.logs.wait("policy file changed", 0); !ok {
		t.Errorf("no 'policy file changed' line; stderr:\n%s", gw.logs)
	}
}

// TestCheckConfig: check-config's exit codes and messages (run in-process).
func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.yaml", reloadPolicyYAML(forbiddenRule))
	typo := file("typo.yaml", reloadPolicyYAML("")+"limits:\n  max_dpth: 3\n")
	several := file("several.yaml", `auth:
  mode: on
  api_keys:
    - {name: k, sha256: "not-hex", roles: [invoker]}
authz:
  default: {allow: ["["]}
rules:
  - {name: half, expr: 'args.title.startsWith('}
`)
	badShadow := file("shadow.yaml", reloadPolicyYAML("rules:\n  - {name: r, expr: 'true', mode: watch}\n"))
	shadowDefault := file("shadowdefault.yaml", strings.Replace(reloadPolicyYAML(""), `default: {allow: ["*"]}`, `default: {allow: ["*"], mode: shadow}`, 1))
	badMode := file("mode.yaml", "auth:\n  mode: maybe\nnormalize:\n  on_entity_bound: guess\n")
	tools := file("tools.yaml", `tools:
  - name: echo
    backend: 127.0.0.1:1
    input_schema: {type: object, properties: {text: {type: string}}}
  - name: create_note
    backend: 127.0.0.1:1
    input_schema: {type: object, properties: {title: {type: string}}}
`)
	badTools := file("badtools.yaml", `tools:
  - name: echo
    backend: 127.0.0.1:1
    input_schema: {type: object, properties: {text: {type: strung}}}
`)
	stdioPolicy := file("stdio.yaml", reloadPolicyYAML("")+"mcp_upstreams:\n  stdio:\n    here: {command: [/bin/sh]}\n    absent: {command: ["+filepath.Join(dir, "no-such-server")+"]}\n")
	stdioTools := file("stdiotools.yaml", `tools:
  - name: ok.tool
    spec: {mcp_tool: {url: "stdio://here", tool: t}}
    input_schema: {type: object}
  - name: typo.tool
    spec: {mcp_tool: {url: "stdio://hree", tool: t}}
    input_schema: {type: object}
`)
	cases := []struct {
		name, reason string
		args         []string
		code         int
		want         []string // in stdout (code 0) or stderr
	}{
		{name: "stdio", reason: "a stdio server this host cannot run, and a tool naming one the policy does not declare, are named",
			args: []string{"--policy", stdioPolicy, "--tools", stdioTools}, code: 1,
			want: []string{"mcp_upstreams.stdio.absent.command: cannot run here", `tool "typo.tool"`, `stdio server "hree"`}},
		{name: "valid", reason: "a valid policy and tools file pass: exit 0, saying what was checked",
			args: []string{"--policy", good, "--tools", tools}, code: 0, want: []string{"ok:", good, tools}},
		{name: "unknown-key", reason: "a typo is a problem named by its field",
			args: []string{"--policy", typo}, code: 1, want: []string{"max_dpth"}},
		{name: "every-build-problem", reason: "a bad key hash, a bad glob and a CEL error are all named, not just the first",
			args: []string{"--policy", several}, code: 1, want: []string{`api key "k"`, `"["`, `rule "half"`}},
		{name: "every-validation-problem", reason: "every field validation refuses is named",
			args: []string{"--policy", badMode}, code: 1, want: []string{"auth.mode", "normalize.on_entity_bound"}},
		{name: "bad-mode", reason: "a mode other than enforce or shadow is named with its rule",
			args: []string{"--policy", badShadow}, code: 1, want: []string{`rule "r": mode "watch"`}},
		{name: "shadow-default", reason: "a shadow authz default would open every tool: refused",
			args: []string{"--policy", shadowDefault}, code: 1, want: []string{"authz: default: mode"}},
		{name: "bad-tool", reason: "a tool whose schema does not compile is named",
			args: []string{"--policy", good, "--tools", badTools}, code: 1, want: []string{"echo"}},
		{name: "missing-file", reason: "a file that cannot be read is a problem",
			args: []string{"--policy", filepath.Join(dir, "nope.yaml")}, code: 1, want: []string{"nope.yaml"}},
		{name: "no-files", reason: "nothing to check is bad usage",
			args: nil, code: 2, want: []string{"--policy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append([]string{"check-config"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (%s)\nstdout: %s\nstderr: %s", code, tc.code, tc.reason, &stdout, &stderr)
			}
			out := stderr.String()
			if tc.code == 0 {
				out = stdout.String()
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q (%s)", out, w, tc.reason)
				}
			}
		})
	}
}

// TestPolicyFileWrittenInPlaceWaitsUntilWhole (issue 28 item 10): a policy
// file rewritten in place, in two parts, is not put in force between them,
// even though its first part alone is a valid policy (one without the deny
// rule the whole file has); a whole in-place rewrite takes effect once the
// file stays quiet.
func TestPolicyFileWrittenInPlaceWaitsUntilWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	whole := reloadPolicyYAML(forbiddenRule)
	writeAtomically(t, path, whole)
	gw := startBinary(t, "--policy", path)
	if got := gw.call(t, "forbidden plans"); got != codes.PermissionDenied {
		t.Fatalf("before the rewrite: %v, want the rule enforced", got)
	}

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	prefix := reloadPolicyYAML("")
	if _, err := f.WriteString(prefix); err != nil {
		t.Fatal(err)
	}
	// Between the parts: the prefix must never be the policy in force.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got := gw.call(t, "forbidden plans"); got != codes.PermissionDenied {
			f.Close()
			t.Fatalf("between the two parts a forbidden call got %v: the half-written file was put in force; stderr:\n%s", got, gw.logs)
		}
	}
	if _, err := f.WriteString(whole[len(prefix):]); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// A whole rewrite in place (the rule removed) takes effect once quiet.
	if err := os.WriteFile(path, []byte(prefix), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for gw.call(t, "forbidden plans") != codes.OK {
		if time.Now().After(deadline) {
			t.Fatalf("the whole in-place rewrite was not put in force; stderr:\n%s", gw.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
