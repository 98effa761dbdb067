package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// slowBackend answers after a second, unless its call's deadline ends first.
func slowBackend(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	select {
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-time.After(time.Second):
		return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("done")}, nil
	}
}

// timedTool is an object tool with its own timeout, served by slowBackend.
func timedTool(name string, timeout time.Duration) gatewaytest.Option {
	return gatewaytest.WithTool(func(backend string) registry.Tool {
		t := gatewaytest.ObjectTool(name)(backend)
		t.Timeout = timeout
		return t
	})
}

// TestDeadlineIsTheEarliestBudget: a call's deadline is the earliest of
// the caller's, the tool's timeout and the gateway's maximum — a caller's
// long deadline no longer replaces a tool's short timeout — and the
// DeadlineExceeded error names the budget that ran out, on both faces.
func TestDeadlineIsTheEarliestBudget(t *testing.T) {
	t.Parallel()
	opts := func(extra ...gatewaytest.Option) []gatewaytest.Option {
		return append([]gatewaytest.Option{gatewaytest.WithMCP(),
			timedTool("short_timeout", 200*time.Millisecond), timedTool("long_timeout", 5*time.Second),
			gatewaytest.WithBackendHandler("short_timeout", slowBackend), gatewaytest.WithBackendHandler("long_timeout", slowBackend),
		}, extra...)
	}
	dflt := gatewaytest.Start(t, opts()...)
	capped := gatewaytest.Start(t, opts(gatewaytest.WithConfig(func(c *server.Config) { c.MaxCallTimeout = 200 * time.Millisecond }))...)

	cases := []struct {
		name, reason string
		env          *gatewaytest.Env
		tool         string
		caller       time.Duration // the gRPC caller's deadline (MCP callers set none)
		code         codes.Code
		source       string // the budget the message must name
		mcp          bool   // also over MCP
	}{
		{name: "tool-timeout-caps-caller", reason: "tool 200ms, caller 2s, backend 1s: the tool's timeout ends the call",
			env: dflt, tool: "short_timeout", caller: 2 * time.Second, code: codes.DeadlineExceeded, source: "the tool's timeout", mcp: true},
		{name: "gateway-maximum-caps-both", reason: "tool 5s, caller 2s, gateway maximum 200ms: the maximum ends the call",
			env: capped, tool: "long_timeout", caller: 2 * time.Second, code: codes.DeadlineExceeded, source: "the gateway's maximum call timeout", mcp: true},
		{name: "caller-deadline-first", reason: "caller 200ms, tool 5s: the caller's own deadline ends the call",
			env: dflt, tool: "long_timeout", caller: 200 * time.Millisecond, code: codes.DeadlineExceeded},
		{name: "within-every-budget", reason: "tool 5s, caller 3s, backend 1s: the call completes",
			env: dflt, tool: "long_timeout", caller: 3 * time.Second, code: codes.OK, mcp: true},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), tc.caller)
			defer cancel()
			_, err := tc.env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: gatewaytest.Args(t, map[string]any{})})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v (%s)", got, err, tc.code, tc.reason)
			}
			if msg := status.Convert(err).Message(); tc.source != "" && !strings.Contains(msg, tc.source) {
				t.Errorf("message %q does not name %q (%s)", msg, tc.source, tc.reason)
			}
		})
		if !tc.mcp {
			continue
		}
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			cs := mustConnect(t, ctx, tc.env.MCPURL, mcpClientOpts{})
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if tc.code == codes.OK {
				if res.IsError {
					t.Fatalf("isError result %q (%s)", resultText(res), tc.reason)
				}
				return
			}
			if !res.IsError || res.Meta[mcpapi.MCPMetaReason] != "backend-deadline" || !strings.Contains(resultText(res), tc.source) {
				t.Errorf("isError=%v reason=%v text %q, want a backend-deadline result naming %q (%s)",
					res.IsError, res.Meta[mcpapi.MCPMetaReason], resultText(res), tc.source, tc.reason)
			}
		})
	}
}
