package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// maxLineBytes is what one access-log or audit line of a refused call may
// take, whatever the caller sent (a bounded prefix of each string).
const maxLineBytes = 4 << 10

// TestToolNameRefusedBeforeAnythingKeysIt: a ~1 MiB tool name is
// InvalidArgument on both faces (and on RegisterTool), quoted only as a
// bounded prefix; 100 distinct unknown names create no per-name rate-limit
// buckets; the access-log and audit lines stay bounded.
func TestToolNameRefusedBeforeAnythingKeysIt(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	p.Limits = policy.Limits{}
	p.RateLimit = policy.RateLimitConfig{Rate: 1000, Burst: 1000}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: audit}
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	// 1 MiB names through both faces take seconds under -race on two
	// cores while other packages' tests run: more than testCtx's 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	huge := strings.Repeat("a", 1<<20)
	callID := strings.Repeat("c", 1<<16)

	t.Run("grpc", func(t *testing.T) {
		for _, tc := range []struct {
			name, tool, reason string
		}{
			{"huge", huge, "a 1 MiB name is refused before a bucket, a counter or a lookup is keyed by it"},
			{"bad-chars", "create note!", "characters outside the rule, the same rule RegisterTool applies"},
			{"65-bytes", strings.Repeat("n", 65), "one byte over the rule's 64"},
		} {
			_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: tc.tool, CallId: callID, Arguments: &structpb.Struct{}})
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), registry.NamePattern) {
				t.Errorf("%s: InvokeTool = %v %q; want InvalidArgument naming the rule (%s)", tc.name, st.Code(), st.Message(), tc.reason)
			}
			if len(st.Message()) > 512 {
				t.Errorf("%s: message is %d bytes; want a bounded prefix of the name (%s)", tc.name, len(st.Message()), tc.reason)
			}
			var field string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
					field = br.GetFieldViolations()[0].GetField()
				}
			}
			if field != "tool" {
				t.Errorf("%s: details %v; want a BadRequest on field tool (%s)", tc.name, st.Details(), tc.reason)
			}
		}
	})

	t.Run("register", func(t *testing.T) {
		reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
		tool := &gatewayv1.Tool{Name: huge, Backend: env.BackendAddr, InputSchema: gatewaytest.Args(t, map[string]any{"type": "object"})}
		_, err := reg.RegisterTool(withKey(keyAdmin), &gatewayv1.RegisterToolRequest{Tool: tool})
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || len(st.Message()) > 512 || !strings.Contains(st.Message(), registry.NamePattern) {
			t.Errorf("RegisterTool(1 MiB name) = %v (%d-byte message); want InvalidArgument naming the rule, bounded", st.Code(), len(st.Message()))
		}
	})

	t.Run("mcp", func(t *testing.T) {
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: huge, Arguments: map[string]any{}, Meta: mcp.Meta{"flowdrop/call_id": callID}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || len(rpcErr.Message) > 512 || !strings.Contains(rpcErr.Message, registry.NamePattern) {
			t.Errorf("tools/call(1 MiB name) = %v; want invalid params naming the rule, bounded", err)
		}
	})

	t.Run("buckets", func(t *testing.T) {
		before := env.Gateway.RateLimitBuckets()
		cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
		for i := range 100 {
			name := fmt.Sprintf("no_such_tool_%d", i)
			if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: name}); status.Code(err) != codes.NotFound {
				t.Fatalf("InvokeTool(%s) = %v; want NotFound", name, err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name + "_mcp", Arguments: map[string]any{}}); err == nil {
				t.Fatalf("tools/call(%s) succeeded; want unknown tool", name)
			}
		}
		// One shared bucket for the names this caller is not offered, at most.
		if grown := env.Gateway.RateLimitBuckets() - before; grown > 1 {
			t.Errorf("200 calls on distinct unknown names made %d buckets; want at most the caller's one shared bucket", grown)
		}
	})

	t.Run("lines-bounded", func(t *testing.T) {
		lines, _ := auditLines(t, env, audit)
		if len(lines) == 0 {
			t.Fatal("no audit lines")
		}
		for _, l := range lines {
			b, _ := json.Marshal(l)
			if len(b) > maxLineBytes {
				t.Errorf("audit line of %d bytes (tool %.80q…); want each caller string bounded", len(b), l["tool"])
			}
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if len(line) > maxLineBytes {
				t.Errorf("log line of %d bytes: %.200s…; want each caller string bounded", len(line), line)
			}
		}
	})
}

// TestRateLimitSharedBucketHidesExistence: a caller denied run_* gets the
// same answer for a registered tool it may not call as for a name no tool
// has, once its shared bucket is empty; a per-name bucket would let it tell
// them apart (the registered one would still reach the allow list).
func TestRateLimitSharedBucketHidesExistence(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	p.RateLimit = policy.RateLimitConfig{Rate: 0.001, Burst: 2}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	for _, name := range []string{"no_such_1", "no_such_2"} {
		if _, err := env.Client.InvokeTool(withKey(keyLimited), &gatewayv1.InvokeToolRequest{Tool: name}); status.Code(err) == codes.ResourceExhausted {
			t.Fatalf("InvokeTool(%s) = %v; the burst of 2 should allow it", name, err)
		}
	}
	for _, tc := range []struct{ tool, reason string }{
		{"run_command", "registered, but denied to this caller: it shares the bucket of the names it is not offered"},
		{"run_nothing", "not registered (and denied): the same bucket, the same answer"},
	} {
		_, err := env.Client.InvokeTool(withKey(keyLimited), &gatewayv1.InvokeToolRequest{Tool: tc.tool})
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted {
			t.Errorf("InvokeTool(%s) = %v %q; want ResourceExhausted (%s)", tc.tool, st.Code(), st.Message(), tc.reason)
		}
	}
	// An offered tool has its own bucket: the shared one being empty does
	// not limit it.
	if _, err := env.Client.InvokeTool(withKey(keyLimited), &gatewayv1.InvokeToolRequest{Tool: "create_note",
		Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}); err != nil {
		t.Errorf("InvokeTool(create_note) = %v; want OK from its own bucket", err)
	}
}

// TestUnusableCallIDIsRefused: a call id too long or not printable ASCII
// (it would reach the backend as a header) is refused on both faces before
// the backend — gRPC InvalidArgument, MCP JSON-RPC invalid params —; an ordinary id passes through to it.
func TestUnusableCallIDIsRefused(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)), gatewaytest.WithMCP())
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
	args := map[string]any{"title": "t"}
	for _, row := range []struct {
		name, id string
		ok       bool
		reason   string
	}{
		{"ordinary", "call_8f14e45f-ceea-467f-a0e6-1f2a3b4c5d6e", true, "a provider's tool-call id passes and reaches the backend"},
		{"too-long", strings.Repeat("c", 257), false, "one byte over the 256-byte bound"},
		{"newline", "call\n1", false, "a control character cannot travel as a header value"},
		{"non-ascii", "call-é", false, "non-ASCII cannot travel as a plain header value"},
	} {
		t.Run(row.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor("create_note"))
			_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", CallId: row.id, Arguments: gatewaytest.Args(t, args)})
			if row.ok != (err == nil) {
				t.Errorf("gRPC: %v; want ok=%v (%s)", err, row.ok, row.reason)
			}
			if !row.ok && (status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "call id")) {
				t.Errorf("gRPC: %v; want InvalidArgument about the call id (%s)", err, row.reason)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: args, Meta: mcp.Meta{"flowdrop/call_id": row.id}})
			mcpOK := err == nil && !res.IsError
			if row.ok != mcpOK {
				t.Errorf("MCP: result %+v, error %v; want ok=%v (%s)", res, err, row.ok, row.reason)
			}
			// The client's id, not the model's arguments: invalid params,
			// as gRPC's InvalidArgument (call-id-invalid's row).
			var rpcErr *jsonrpc.Error
			if !row.ok && (!errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "call id")) {
				t.Errorf("MCP: %v; want JSON-RPC invalid params about the call id (%s)", err, row.reason)
			}
			wantCalls := before
			if row.ok {
				wantCalls += 2
			}
			if got := len(env.Backend.CallsFor("create_note")); got != wantCalls {
				t.Errorf("backend calls %d → %d; want %d (%s)", before, got, wantCalls, row.reason)
			}
		})
	}
}
