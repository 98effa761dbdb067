package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// htmlEscape escapes every '&' of s n times ("&&" once: "&amp;&amp;").
func htmlEscape(s string, n int) string {
	for range n {
		s = strings.ReplaceAll(s, "&", "&amp;")
	}
	return s
}

// TestEntityBoundIsNotABypass: "&&" escaped nine times is still
// "&amp;&amp;" after the eight decoding passes RT-TOOL-8 lets normalization
// stop at, so the rule !args.command.contains("&&") would pass it. By
// default the gateway refuses such a call (InvalidArgument naming the path
// and the bound) on both faces, and the backend is never called;
// normalize.on_entity_bound: forward lets it through as left at the bound.
func TestEntityBoundIsNotABypass(t *testing.T) {
	t.Parallel()
	rule := policy.Rule{Name: "no-shell-chaining", Tools: []string{"run_command"}, Expr: `!args.command.contains("&&")`}
	start := func(t *testing.T, onBound string) *gatewaytest.Env {
		return gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
			c.Policy.Rules = []policy.Rule{rule}
			c.Policy.Normalize.OnEntityBound = onBound
		}))
	}
	refuse, forward := start(t, ""), start(t, server.EntityBoundForward)
	atBound := htmlEscape("ls && rm -rf /", normalize.DefaultMaxPasses)
	overBound := htmlEscape("ls && rm -rf /", normalize.DefaultMaxPasses+1)

	cases := []struct {
		name, reason string
		env          *gatewaytest.Env
		command      string
		code         codes.Code
		policyReason string
		forwarded    string // what the backend must receive when code is OK
	}{
		{name: "escaped-8-times", reason: "eight passes decode it fully: the rule sees && and refuses",
			env: refuse, command: atBound, code: codes.PermissionDenied, policyReason: policy.ReasonRuleDenied},
		{name: "escaped-9-times-refused", reason: "still changing at the bound: refused by default, before the rule could be fooled",
			env: refuse, command: overBound, code: codes.InvalidArgument, policyReason: string(pipeline.ReasonEntityBound)},
		{name: "escaped-9-times-forward", reason: "on_entity_bound: forward lets it through as left after the last pass",
			env: forward, command: overBound, code: codes.OK, forwarded: "ls &amp;&amp; rm -rf /"},
		{name: "plain-command", reason: "the control: a command without entities reaches the backend",
			env: refuse, command: "ls -l", code: codes.OK, forwarded: "ls -l"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			before := len(tc.env.Backend.CallsFor("run_command"))
			_, err := tc.env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "run_command",
				Arguments: gatewaytest.Args(t, map[string]any{"command": tc.command})})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v (%s)", got, err, tc.code, tc.reason)
			}
			calls := tc.env.Backend.CallsFor("run_command")[before:]
			if tc.code != codes.OK {
				if _, pr := policyReason(err); pr != tc.policyReason {
					t.Errorf("policy_reason %q, want %q (%s)", pr, tc.policyReason, tc.reason)
				}
				if tc.policyReason == string(pipeline.ReasonEntityBound) {
					msg := status.Convert(err).Message()
					if !strings.Contains(msg, "/command") || !strings.Contains(msg, "8 entity-decoding passes") {
						t.Errorf("message %q does not name the path and the bound", msg)
					}
				}
				if len(calls) != 0 {
					t.Errorf("the backend was called %d times (%s)", len(calls), tc.reason)
				}
				return
			}
			if len(calls) != 1 || calls[0].Request.GetArguments().GetFields()["command"].GetStringValue() != tc.forwarded {
				t.Errorf("backend calls %v, want one with command %q (%s)", calls, tc.forwarded, tc.reason)
			}
		})
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			ctx := testCtx(t)
			cs := mustConnect(t, ctx, tc.env.MCPURL, mcpClientOpts{})
			before := len(tc.env.Backend.CallsFor("run_command"))
			args, _ := json.Marshal(map[string]string{"command": tc.command})
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			calls := tc.env.Backend.CallsFor("run_command")[before:]
			if tc.code != codes.OK {
				if !res.IsError || res.Meta[mcpapi.MCPMetaReason] != tc.policyReason {
					t.Errorf("isError=%v reason=%v, want an isError result with %q (%s)", res.IsError, res.Meta[mcpapi.MCPMetaReason], tc.policyReason, tc.reason)
				}
				if tc.policyReason == string(pipeline.ReasonEntityBound) && !strings.Contains(resultText(res), "/command") {
					t.Errorf("text %q does not name the path", resultText(res))
				}
				if len(calls) != 0 {
					t.Errorf("the backend was called %d times (%s)", len(calls), tc.reason)
				}
				return
			}
			if res.IsError || len(calls) != 1 || calls[0].Request.GetArguments().GetFields()["command"].GetStringValue() != tc.forwarded {
				t.Errorf("result %+v, backend calls %v, want one with command %q (%s)", res, calls, tc.forwarded, tc.reason)
			}
		})
	}
}

// TestPolicyFileNormalize: normalize.on_entity_bound is read from the
// policy file, and a value other than refuse or forward is refused.
func TestPolicyFileNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reason, file, want, wantErr string
	}{
		{name: "default", reason: "absent means refuse", file: "auth: {mode: off}\n", want: ""},
		{name: "forward", reason: "the documented opt-out", file: "auth: {mode: off}\nnormalize: {on_entity_bound: forward}\n", want: server.EntityBoundForward},
		{name: "refuse", reason: "the default, written out", file: "auth: {mode: off}\nnormalize: {on_entity_bound: refuse}\n", want: server.EntityBoundRefuse},
		{name: "typo", reason: "a misspelt value must not silently forward or refuse", file: "auth: {mode: off}\nnormalize: {on_entity_bound: allow}\n", wantErr: "normalize.on_entity_bound"},
		{name: "unknown-key", reason: "unknown keys are refused", file: "auth: {mode: off}\nnormalize: {on_bound: forward}\n", wantErr: "on_bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := server.ParsePolicy([]byte(tc.file), "test.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || p.Normalize.OnEntityBound != tc.want {
				t.Fatalf("got %q, %v, want %q (%s)", p.Normalize.OnEntityBound, err, tc.want, tc.reason)
			}
		})
	}
}
