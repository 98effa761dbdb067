package clienttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// repoRoot is where tools/ts and gen/ts are, from this package's directory.
const repoRoot = "../.."

// nodeExample lays out what a user's project holds — the example, the
// generated client as gen/, the pinned runtime as node_modules — in a
// temporary directory, and returns it with the node binary. Without node or
// `npm ci` the test skips locally and fails under CI=true.
func nodeExample(t *testing.T) (dir, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH")
	}
	modules, err := filepath.Abs(filepath.Join(repoRoot, "tools/ts/node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@connectrpc/connect-node")); err != nil {
		unavailable(t, "tools/ts/node_modules is missing: run npm ci in tools/ts")
	}
	dir = t.TempDir()
	// A copy, not a link: Node resolves a module's imports from its real
	// path, and gen/ts has no node_modules beside it.
	if err := os.CopyFS(filepath.Join(dir, "gen"), os.DirFS(filepath.Join(repoRoot, "gen/ts"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "tools/ts/invoke_tool_call.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"invoke_tool_call.mjs": example,
		"package.json":         []byte(`{"type": "module"}` + "\n"), // the generated .js files are ES modules
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, node
}

// toolCallID is the model's tool-call id, which the example sends as call_id.
const toolCallID = "call_7bK2mQ9xR4tZ1vY8wE3nP6sL"

// completion is an OpenAI chat completion whose first tool call calls tool
// with the arguments string.
func completion(t *testing.T, tool, arguments string) []byte {
	t.Helper()
	call := map[string]any{"id": toolCallID, "type": "function",
		"function": map[string]any{"name": tool, "arguments": arguments}}
	b, err := json.Marshal(map[string]any{"object": "chat.completion", "choices": []any{
		map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// toolCallCases are the calls every client makes, each with what the
// gateway answers.
var toolCallCases = []struct {
	name, reason    string
	tool, arguments string
	repairs         []*gatewayv1.Repair // for a call that succeeds
	code, msg       string              // for a refusal: the gRPC code's name and a part of the message
}{
	{name: "repaired", reason: "stringified tags and an entity-encoded title are repaired, and the echo shows what the backend got",
		tool: "create_note", arguments: `{"title":"Q3 &amp; Q4","tags":"[\"finance\",\"q3\"]"}`,
		repairs: []*gatewayv1.Repair{
			{Path: "/tags", Kind: gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED},
			{Path: "/title", Kind: gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED, Passes: 1},
		}},
	{name: "clean", reason: "arguments that need no repair pass as sent",
		tool: "create_note", arguments: `{"title":"Standup","body":"notes"}`, repairs: nil},
	{name: "inexact-number", reason: "2^53+1 in the text is refused before anything rounds it, naming its path",
		tool: "create_note", arguments: `{"title":"a","body":9007199254740993}`, code: "InvalidArgument", msg: "the number at /body cannot be represented exactly"},
	{name: "duplicate-key", reason: "the strict parser refuses a duplicate key, naming it, and the client sees InvalidArgument",
		tool: "create_note", arguments: `{"title":"a","title":"b"}`, code: "InvalidArgument", msg: "the key at /title appears more than once"},
	{name: "unknown-tool", reason: "a tool the registry does not hold is NotFound",
		tool: "no_such_tool", arguments: `{}`, code: "NotFound", msg: "no_such_tool"},
}

// checkToolCalls runs every case through client (which returns the command
// that sends a completion read from stdin) and asserts its printed answer:
// the Go client's answer for the same call, with the case's repairs, or the
// case's refusal.
//
// With details, the client also prints the status's google.rpc details
// ({"@type": …} objects): they must be the ones the Go client gets, and a
// refusal always carries some (ErrorInfo at least).
func checkToolCalls(t *testing.T, env *gatewaytest.Env, details bool, client func() *exec.Cmd) {
	for _, tc := range toolCallCases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := client()
			cmd.Stdin = bytes.NewReader(completion(t, tc.tool, tc.arguments))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) {
				t.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
			}
			if tc.code != "" {
				var refusal struct {
					Error struct {
						Code, Message string
						Details       []map[string]any
					}
				}
				if err := json.Unmarshal(out, &refusal); err != nil || exit == nil {
					t.Fatalf("want a refusal (%s), got %q (exit %v, %v)", tc.reason, out, err, stderr.String())
				}
				if refusal.Error.Code != tc.code || !strings.Contains(refusal.Error.Message, tc.msg) {
					t.Errorf("refusal %+v, want %s with %q (%s)", refusal.Error, tc.code, tc.msg, tc.reason)
				}
				if details {
					var got, want []string
					for _, d := range refusal.Error.Details {
						typ, _ := d["@type"].(string)
						got = append(got, typ)
					}
					_, err := env.Client.InvokeTool(t.Context(), &gatewayv1.InvokeToolRequest{Tool: tc.tool, ArgumentsJson: tc.arguments, CallId: toolCallID})
					for _, d := range status.Convert(err).Proto().GetDetails() {
						want = append(want, d.GetTypeUrl())
					}
					if len(want) == 0 || !slices.Equal(got, want) {
						t.Errorf("details decoded by the client %v, want the Go client's %v, not none (%s)", got, want, tc.reason)
					}
				}
				return
			}
			got := &gatewayv1.InvokeToolResponse{}
			if err := protojson.Unmarshal(out, got); err != nil {
				t.Fatalf("the client printed %q: %v\n%s", out, err, stderr.String())
			}
			if diff := cmp.Diff(tc.repairs, got.GetRepairs(), protocmp.Transform(), protocmp.SortRepeatedFields(&gatewayv1.InvokeToolResponse{}, "repairs")); diff != "" {
				t.Errorf("repairs (-want +got) (%s):\n%s", tc.reason, diff)
			}
			want, err := env.Client.InvokeTool(t.Context(), &gatewayv1.InvokeToolRequest{Tool: tc.tool, ArgumentsJson: tc.arguments, CallId: toolCallID})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("the client's answer differs from the Go client's (-go +client) (%s):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTypeScriptClientInvokesAToolCall: the generated TypeScript client,
// run by Node over plaintext HTTP/2 to 127.0.0.1, sends a model's tool call
// as argumentsJson and gets the answer the Go client gets for the same call
// — the result and the repairs — and a refusal's gRPC code and message.
func TestTypeScriptClientInvokesAToolCall(t *testing.T) {
	dir, node := nodeExample(t)
	env := gatewaytest.Start(t)
	checkToolCalls(t, env, false, func() *exec.Cmd {
		cmd := exec.Command(node, "invoke_tool_call.mjs", "http://"+env.Addr)
		cmd.Dir = dir
		return cmd
	})
}

// TestPythonClientInvokesAToolCall: the same calls with the generated Python
// client (gen/python) on Debian's python3-grpcio and python3-protobuf, and
// a refusal's details decoded with the google.rpc modules gen/python ships.
func TestPythonClientInvokesAToolCall(t *testing.T) {
	python := pythonWithGRPC(t)
	genPython, err := filepath.Abs(filepath.Join(repoRoot, "gen/python"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs(filepath.Join(repoRoot, "tools/python/invoke_tool_call.py"))
	if err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t)
	checkToolCalls(t, env, true, func() *exec.Cmd {
		cmd := exec.Command(python, example, env.Addr)
		// No __pycache__ in gen/python: the tree stays as generated.
		cmd.Env = append(os.Environ(), "PYTHONPATH="+genPython, "PYTHONDONTWRITEBYTECODE=1")
		return cmd
	})
}

// pythonWithGRPC returns a python3 that imports grpc and google.protobuf:
// Debian's (where .ci/run installs python3-grpcio), else the one on PATH.
// Without one the test skips locally and fails under CI=true.
func pythonWithGRPC(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import grpc, google.protobuf").Run() == nil {
			return p
		}
	}
	unavailable(t, "no python3 with grpc and protobuf (Debian: python3-grpcio python3-protobuf)")
	return ""
}

// unavailable skips locally and fails under CI=true, where .ci/run installs
// what the clients need.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: .ci/run installs it)", why)
	}
	t.Skip(why)
}
