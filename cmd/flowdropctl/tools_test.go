package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/grpcapi"
	"google.golang.org/grpc"
)

// startRegistryGateway serves the ToolRegistryService over a fresh in-memory
// registry on 127.0.0.1 and returns its address.
func startRegistryGateway(t *testing.T) string {
	t.Helper()
	store := memstore.New()
	reg := registry.New(store)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	stop := grpcapi.RegisterRegistryService(gs, reg)
	served := make(chan struct{})
	go func() { defer close(served); gs.Serve(lis) }()
	t.Cleanup(func() {
		stop()
		gs.Stop()
		<-served
		reg.Close()
		store.Close()
	})
	return lis.Addr().String()
}

const toolYAML = `name: create_board
description: Create a board.
backend: 127.0.0.1:7001
timeout: 5s
labels: {team: boards}
input_schema:
  type: object
  properties:
    title: {type: string}
    tags: {type: array, items: {type: string}}
  required: [title]
`

// The same tool with tags removed: a breaking change.
const breakingYAML = `name: create_board
description: Create a board.
backend: 127.0.0.1:7001
labels: {team: boards}
input_schema:
  type: object
  properties:
    title: {type: string}
  required: [title]
`

const toolsListJSON = `{"tools": [
  {"name": "notes.create", "backend": "127.0.0.1:7002", "labels": {"team": "notes", "tier": "gold"},
   "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}},
  {"name": "notes.delete", "backend": "127.0.0.1:7002", "labels": {"team": "notes"},
   "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
]}`

// An array without items: OpenAI and Gemini reject it.
const noItemsYAML = `name: tagger
backend: 127.0.0.1:7003
input_schema:
  type: object
  properties:
    tags: {type: array}
`

func TestToolsCommands(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tool, tools, breaking, noItems := write("tool.yaml", toolYAML), write("tools.json", toolsListJSON), write("breaking.yaml", breakingYAML), write("noitems.yaml", noItemsYAML)
	unknownField := write("bad.yaml", "name: x\ncolour: red\nbackend: 127.0.0.1:1\ninput_schema: {type: object}\n")
	badSchema := write("badschema.yaml", "name: x\nbackend: 127.0.0.1:1\ninput_schema: {type: string}\n")

	// The steps run in order against one registry; the memory store numbers
	// writes 1, 2, 3, ...
	steps := []struct {
		name       string
		reason     string
		args       []string // after "tools"
		gateway    bool     // insert --addr
		wantCode   int
		wantStdout []string // in this order
		wantStderr []string // in this order
		noStdout   []string
	}{
		{name: "register-one", reason: "a one-tool file is registered and reported with its revision",
			args: []string{"register", "-f", tool}, gateway: true, wantStdout: []string{"created create_board (revision 1)"}},
		{name: "register-list", reason: "a tools: list registers every tool in order",
			args: []string{"register", "-f", tools}, gateway: true, wantStdout: []string{"created notes.create (revision 2)", "created notes.delete (revision 3)"}},
		{name: "register-stale-revision", reason: "an expected revision mismatch exits 1 naming both revisions",
			args: []string{"register", "-f", tool, "--expected-revision", "0"}, gateway: true, wantCode: 1,
			wantStderr: []string{`error: Aborted: tool "create_board": expected revision 0, current revision is 1`}},
		{name: "register-incompatible", reason: "--require-compatible refuses a breaking update and lists each problem",
			args: []string{"register", "-f", breaking, "--require-compatible"}, gateway: true, wantCode: 1,
			wantStderr: []string{"error: FailedPrecondition: ", "  incompatible /properties/tags: parameter `tags` was removed"}},
		{name: "register-breaking-notes", reason: "without --require-compatible the update goes through with its compatibility notes",
			args: []string{"register", "-f", breaking, "--expected-revision", "1"}, gateway: true,
			wantStdout: []string{"updated create_board (revision 4)", "  compatibility: removed /properties/tags: parameter `tags` was removed"}},
		{name: "register-strict-lint", reason: "--strict-lint refuses lint errors, one field violation per line",
			args: []string{"register", "-f", noItems, "--strict-lint"}, gateway: true, wantCode: 1,
			wantStderr: []string{"error: InvalidArgument: ", "  tool.input_schema/properties/tags: openai array-items-required: ", "  tool.input_schema/properties/tags: gemini array-items-required: "}},
		{name: "register-lint-warnings", reason: "without --strict-lint the tool is registered and the findings printed",
			args: []string{"register", "-f", noItems}, gateway: true,
			wantStdout: []string{"created tagger (revision 5)", "  lint: openai error /properties/tags array-items-required: "}},
		{name: "register-unknown-field", reason: "a file with an unknown field is bad input (2), named before calling the gateway",
			args: []string{"register", "-f", unknownField}, gateway: true, wantCode: 2, wantStderr: []string{"bad.yaml", `unknown field "colour"`}},
		{name: "register-bad-schema", reason: "a schema that cannot compile is bad input naming the problem",
			args: []string{"register", "-f", badSchema}, gateway: true, wantCode: 2, wantStderr: []string{`root type must be "object"`}},
		{name: "register-no-file", reason: "-f is required", args: []string{"register"}, gateway: true, wantCode: 2, wantStderr: []string{"-f FILE is required"}},
		{name: "register-expected-many", reason: "--expected-revision cannot apply to several tools",
			args: []string{"register", "-f", tools, "--expected-revision", "2"}, gateway: true, wantCode: 2, wantStderr: []string{"applies to one tool"}},
		{name: "list", reason: "list prints every tool in name order with revision and labels",
			args: []string{"list"}, gateway: true,
			wantStdout: []string{"NAME", "create_board", "team=boards", "notes.create", "team=notes,tier=gold", "notes.delete", "tagger"}},
		{name: "list-filtered", reason: "--prefix and --label filter on the gateway",
			args: []string{"list", "--prefix", "notes.", "--label", "tier=gold"}, gateway: true,
			wantStdout: []string{"notes.create"}, noStdout: []string{"notes.delete", "create_board", "tagger"}},
		{name: "list-paged-json", reason: "list pages through everything (page size 1 here) and --json prints an array",
			args: []string{"list", "--page-size", "1", "--json"}, gateway: true,
			wantStdout: []string{`"name": "create_board"`, `"name": "notes.create"`, `"name": "notes.delete"`, `"name": "tagger"`}},
		{name: "get", reason: "get prints the stored tool as JSON",
			args: []string{"get", "create_board"}, gateway: true,
			wantStdout: []string{`"name": "create_board"`, `"input_schema": {`, `"backend": "127.0.0.1:7001"`, `"revision": "4"`}},
		{name: "get-unknown", reason: "an unknown tool exits 1 with NotFound naming it",
			args: []string{"get", "nope"}, gateway: true, wantCode: 1, wantStderr: []string{`error: NotFound: tool "nope" is not registered`}},
		{name: "get-two-names", reason: "get takes one NAME", args: []string{"get", "a", "b"}, gateway: true, wantCode: 2, wantStderr: []string{"want exactly 1 NAME, got 2"}},
		{name: "delete-stale", reason: "a conditional delete at the wrong revision is refused",
			args: []string{"delete", "tagger", "--expected-revision", "1"}, gateway: true, wantCode: 1,
			wantStderr: []string{`error: Aborted: tool "tagger": expected revision 1, current revision is 5`}},
		{name: "delete", reason: "delete removes the tool", args: []string{"delete", "--expected-revision", "5", "tagger"}, gateway: true, wantStdout: []string{"deleted tagger"}},
		{name: "watch-current", reason: "watch from 0 starts with the current tools as PUT lines",
			args: []string{"watch", "--count", "3"}, gateway: true,
			wantStdout: []string{"PUT create_board revision=4 backend=127.0.0.1:7001", "PUT notes.create revision=2", "PUT notes.delete revision=3"}},
		{name: "watch-from", reason: "watch --from prints the changes after that revision, deletes included",
			args: []string{"watch", "--from", "4", "--count", "2"}, gateway: true,
			wantStdout: []string{"PUT tagger revision=5", "DELETE tagger revision=6"}},
		{name: "unknown-subcommand", reason: "an unknown tools command is a usage error", args: []string{"frobnicate"}, wantCode: 2, wantStderr: []string{`unknown command "frobnicate"`}},
		{name: "lint", reason: "tools lint runs the offline linter", args: []string{"lint", "-f", noItems}, wantCode: 1,
			wantStdout: []string{"openai error /input_schema/properties/tags array-items-required"}},
		{name: "unreachable", reason: "a gateway that is not there is Unavailable, not a hang",
			args: []string{"get", "--addr", "127.0.0.1:1", "--timeout", "5s", "x"}, wantCode: 1, wantStderr: []string{"error: Unavailable: "}},
	}
	// Each step runs against a gateway of its own after the steps before it
	// (unchecked), so every subtest holds on its own too.
	argsFor := func(addr string, args []string, gateway bool) []string {
		if gateway {
			return append([]string{"tools", args[0], "--addr", addr, "--timeout", "10s"}, args[1:]...)
		}
		return append([]string{"tools"}, args...)
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			addr := startRegistryGateway(t)
			for _, prev := range steps[:i] {
				if prev.gateway {
					run(argsFor(addr, prev.args, true), strings.NewReader(""), io.Discard, io.Discard)
				}
			}
			args := argsFor(addr, st.args, st.gateway)
			var stdout, stderr bytes.Buffer
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code != st.wantCode {
				t.Fatalf("exit code %d, want %d (%s)\nstdout: %s\nstderr: %s", code, st.wantCode, st.reason, &stdout, &stderr)
			}
			inOrder(t, "stdout", stdout.String(), st.wantStdout, st.reason)
			inOrder(t, "stderr", stderr.String(), st.wantStderr, st.reason)
			for _, s := range st.noStdout {
				if strings.Contains(stdout.String(), s) {
					t.Errorf("stdout has %q (%s):\n%s", s, st.reason, &stdout)
				}
			}
		})
	}
}

// inOrder checks that out holds each of want, in that order.
func inOrder(t *testing.T, which, out string, want []string, reason string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s lacks %q after the earlier expected text (%s):\n%s", which, w, reason, out)
			return
		}
		rest = rest[i+len(w):]
	}
}

func TestToolsListJSONIsAnArray(t *testing.T) {
	addr := startRegistryGateway(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"tools", "list", "--addr", addr, "--json"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	var v []any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || len(v) != 0 {
		t.Errorf("list --json on an empty registry = %q; want [] (%v)", &stdout, err)
	}
}
