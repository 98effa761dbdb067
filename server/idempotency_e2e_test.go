package server_test

// Idempotent invocation (issue 13 items 2, 1b, 5): real gateways over
// 127.0.0.1, a real redis-server and embedded etcd for the fleet, the MCP
// SDK's client for MCP.

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/etcdtest"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
)

// countingTool is a backend handler that counts its runs, optionally
// waiting first (a slow tool), and answers result.
type countingTool struct {
	runs   atomic.Int64
	delay  time.Duration
	result string
}

func (ct *countingTool) handle(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	ct.runs.Add(1)
	if ct.delay > 0 {
		select {
		case <-time.After(ct.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(ct.result)}, nil
}

func keyedCall(ctx context.Context, gw gatewayv1.ToolGatewayServiceClient, key string, args map[string]any, timeout time.Duration) (*gatewayv1.InvokeToolResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, _ := structpb.NewStruct(args)
	return gw.InvokeTool(cctx, &gatewayv1.InvokeToolRequest{Tool: fleetTool, Arguments: s, IdempotencyKey: key})
}

func errorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	return nil
}

// A call that times out on replica A (the tool is slower than A's
// deadline) and is retried on replica B with the same key runs the tool
// once: B gets A's run's result, marked replayed.
func TestIdempotentRetryOnAnotherReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := redistest.Start(t)
	cluster := etcdtest.Start(t)
	tool := &countingTool{delay: 1500 * time.Millisecond, result: "the one result"}
	backend := fleetBackend(t, tool.handle)
	a := startFleetReplica(t, "A", cluster, rs.Addr(), backend, server.DemoPolicy())
	b := startFleetReplica(t, "B", cluster, rs.Addr(), backend, server.DemoPolicy())

	args := map[string]any{"order": "42"}
	if _, err := keyedCall(ctx, a.gw, "retry-key", args, 300*time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call on A with a deadline shorter than the tool: %v; want DeadlineExceeded", err)
	}
	resp, err := keyedCall(ctx, b.gw, "retry-key", args, 10*time.Second)
	if err != nil {
		t.Fatalf("retry on B with the same key: %v", err)
	}
	if got := resp.GetResult().GetStringValue(); got != "the one result" || !resp.GetReplayed() {
		t.Fatalf("retry on B = %q replayed=%v; want A's run's result, replayed", got, resp.GetReplayed())
	}
	// Once more, after completion: the stored result, no run.
	resp, err = keyedCall(ctx, a.gw, "retry-key", args, 10*time.Second)
	if err != nil || !resp.GetReplayed() || resp.GetResult().GetStringValue() != "the one result" {
		t.Fatalf("third call on A = %v, %v; want the stored result, replayed", resp, err)
	}
	if n := tool.runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times; want once", n)
	}
	// The key is namespaced and names no caller in clear; it expires.
	keys := redisKeys(t, rs.Addr(), "flowdrop:idem:*")
	if len(keys) != 1 || strings.Contains(keys[0], "anonymous") || strings.Contains(keys[0], "retry-key") {
		t.Fatalf("redis keys %v; want one hashed key", keys)
	}
}

// 20 concurrent calls with one key across two replicas: one run, and
// every caller (each with time to wait) gets its result.
func TestIdempotentConcurrentDuplicatesRunOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := redistest.Start(t)
	cluster := etcdtest.Start(t)
	tool := &countingTool{delay: 300 * time.Millisecond, result: "shared"}
	backend := fleetBackend(t, tool.handle)
	// What is tested is that one key runs once however the duplicates
	// race, not Redis's speed: a command timeout of the default 100 ms can
	// pass on a loaded 2-core CI machine and fail a call closed.
	slowRedisOK := func(c *server.Config) { c.Redis.Timeout = 2 * time.Second }
	a := startFleetReplica(t, "A", cluster, rs.Addr(), backend, server.DemoPolicy(), slowRedisOK)
	b := startFleetReplica(t, "B", cluster, rs.Addr(), backend, server.DemoPolicy(), slowRedisOK)

	var wg sync.WaitGroup
	var replayed atomic.Int64
	for i := range 20 {
		r := []*fleetReplica{a, b}[i%2]
		wg.Go(func() {
			resp, err := keyedCall(ctx, r.gw, "one-key", map[string]any{"x": 1}, 20*time.Second)
			if err != nil {
				t.Errorf("call %d on %s: %v; want OK (it had time to wait)", i, r.name, err)
				return
			}
			if resp.GetResult().GetStringValue() != "shared" {
				t.Errorf("call %d on %s = %q; want the one run's result", i, r.name, resp.GetResult().GetStringValue())
			}
			if resp.GetReplayed() {
				replayed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := tool.runs.Load(); n != 1 {
		t.Fatalf("20 concurrent calls with one key ran the tool %d times; want once", n)
	}
	if n := replayed.Load(); n != 19 {
		t.Errorf("%d answers marked replayed; want 19 (all but the one that ran)", n)
	}
}

// A duplicate that cannot wait for the running call (its deadline comes
// first) is told to retry: Aborted with RetryInfo; the retry gets the result.
func TestIdempotentDuplicateThatCannotWaitIsAborted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := &countingTool{delay: 1500 * time.Millisecond, result: "slow"}
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)), gatewaytest.WithBackendHandler(fleetTool, tool.handle))
	first := make(chan error, 1)
	go func() {
		_, err := keyedCall(ctx, env.Client, "k", nil, 10*time.Second)
		first <- err
	}()
	var err error
	for range 100 { // until the first call holds the key
		if _, err = keyedCall(ctx, env.Client, "k", nil, 300*time.Millisecond); status.Code(err) == codes.Aborted {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status.Code(err) != codes.Aborted || errorInfo(err).GetReason() != "IDEMPOTENCY_IN_PROGRESS" {
		t.Fatalf("duplicate with a short deadline: %v; want Aborted IDEMPOTENCY_IN_PROGRESS", err)
	}
	var retry *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	if retry.GetRetryDelay().AsDuration() <= 0 {
		t.Errorf("Aborted without a RetryInfo delay: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	resp, err := keyedCall(ctx, env.Client, "k", nil, 10*time.Second)
	if err != nil || !resp.GetReplayed() || tool.runs.Load() != 1 {
		t.Fatalf("retry after completion = %v, %v, %d runs; want replayed, one run", resp, err, tool.runs.Load())
	}
}

// The same key with other normalized arguments is refused, naming the key;
// arguments that normalize to the same value are the same call.
func TestIdempotencyKeyArguments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := &countingTool{result: "ok"}
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)), gatewaytest.WithBackendHandler(fleetTool, tool.handle))
	if _, err := keyedCall(ctx, env.Client, "order-7", map[string]any{"qty": 1}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		key      string
		args     map[string]any
		code     codes.Code
		replayed bool
		reason   string
	}{
		{"same", "order-7", map[string]any{"qty": 1}, codes.OK, true, "the same call: the stored result"},
		{"other args", "order-7", map[string]any{"qty": 2}, codes.InvalidArgument, false, "a key names one call: other arguments are refused, naming the key"},
		{"new key", "order-8", map[string]any{"qty": 2}, codes.OK, false, "a new key runs"},
		{"control byte", "bad\nkey", nil, codes.InvalidArgument, false, "printable ASCII only (it is logged and audited)"},
		{"too long", strings.Repeat("k", 257), nil, codes.InvalidArgument, false, "at most 256 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := keyedCall(ctx, env.Client, tc.key, tc.args, 5*time.Second)
			if status.Code(err) != tc.code {
				t.Fatalf("%v; want %v (%s)", err, tc.code, tc.reason)
			}
			if resp.GetReplayed() != tc.replayed {
				t.Errorf("replayed = %v; want %v (%s)", resp.GetReplayed(), tc.replayed, tc.reason)
			}
			if tc.name == "other args" {
				if msg := status.Convert(err).Message(); !strings.Contains(msg, `"order-7"`) || errorInfo(err).GetReason() != "IDEMPOTENCY_KEY_REUSED" {
					t.Errorf("refusal %q %v; want it to name the key, reason IDEMPOTENCY_KEY_REUSED", msg, errorInfo(err))
				}
			}
		})
	}
	if n := tool.runs.Load(); n != 2 {
		t.Errorf("the tool ran %d times; want 2 (order-7 once, order-8 once)", n)
	}
}

// The key also comes as idempotency-key metadata; a header and a field
// that disagree are refused.
func TestIdempotencyKeyHeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := &countingTool{result: "ok"}
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)), gatewaytest.WithBackendHandler(fleetTool, tool.handle))
	hctx := metadata.AppendToOutgoingContext(ctx, "idempotency-key", "hdr-1")
	for i, want := range []bool{false, true} {
		resp, err := keyedCall(hctx, env.Client, "", map[string]any{}, 5*time.Second)
		if err != nil || resp.GetReplayed() != want {
			t.Fatalf("call %d with the key in metadata = %v, %v; want replayed=%v", i, resp, err, want)
		}
	}
	if _, err := keyedCall(hctx, env.Client, "other", map[string]any{}, 5*time.Second); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("header and field disagree: %v; want InvalidArgument", err)
	}
	if n := tool.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once", n)
	}
}

// A result over idempotency.max_result_bytes is answered but not stored;
// a duplicate is told so (FailedPrecondition naming the bound) and the
// tool does not run again.
func TestIdempotentResultOverBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := &countingTool{result: strings.Repeat("x", 1000)}
	p := server.DemoPolicy()
	p.Idempotency.MaxResultBytes = 100
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)), gatewaytest.WithBackendHandler(fleetTool, tool.handle))
	resp, err := keyedCall(ctx, env.Client, "big", nil, 5*time.Second)
	if err != nil || len(resp.GetResult().GetStringValue()) != 1000 || resp.GetReplayed() {
		t.Fatalf("first call = %v; want the whole result", err)
	}
	_, err = keyedCall(ctx, env.Client, "big", nil, 5*time.Second)
	if status.Code(err) != codes.FailedPrecondition || errorInfo(err).GetMetadata()["limit"] != "idempotency.max_result_bytes" {
		t.Fatalf("duplicate of a result over the bound: %v %v; want FailedPrecondition naming idempotency.max_result_bytes", err, errorInfo(err))
	}
	if !strings.Contains(status.Convert(err).Message(), "100 bytes") {
		t.Errorf("message %q; want the bound", status.Convert(err).Message())
	}
	if n := tool.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once", n)
	}
}

// Failures are not stored: the next try runs. The backend failing (the
// tool's own error status) releases the key.
func TestIdempotentFailureIsNotStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var runs atomic.Int64
	env := gatewaytest.Start(t, gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)),
		gatewaytest.WithBackendHandler(fleetTool, func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			if runs.Add(1) == 1 {
				return nil, status.Error(codes.Unavailable, "not yet")
			}
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("second try"), IsError: true}, nil
		}))
	if _, err := keyedCall(ctx, env.Client, "k", nil, 5*time.Second); status.Code(err) != codes.Unavailable {
		t.Fatalf("first call: %v; want the backend's Unavailable", err)
	}
	resp, err := keyedCall(ctx, env.Client, "k", nil, 5*time.Second)
	if err != nil || resp.GetReplayed() || !resp.GetIsError() {
		t.Fatalf("second call = %v, %v; want it run (is_error result)", resp, err)
	}
	// The tool's own is_error answer is its outcome: stored.
	resp, err = keyedCall(ctx, env.Client, "k", nil, 5*time.Second)
	if err != nil || !resp.GetReplayed() || !resp.GetIsError() || resp.GetResult().GetStringValue() != "second try" {
		t.Fatalf("third call = %v, %v; want the stored is_error result, replayed", resp, err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("runs = %d; want 2", n)
	}
}

// MCP: the key in _meta, the replay marked in the result's _meta and in
// the audit line. The bolt store (next to the registry) keeps it.
func TestIdempotentMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool := &countingTool{result: "mcp result"}
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	p := server.DemoPolicy()
	p.Audit = server.AuditConfig{Path: audit}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
		gatewaytest.WithTool(gatewaytest.ObjectTool(fleetTool)), gatewaytest.WithBackendHandler(fleetTool, tool.handle),
		gatewaytest.WithConfig(func(c *server.Config) { c.Store.Kind, c.Store.DataDir = server.StoreBolt, dir }))
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	call := func() *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fleetTool, Arguments: map[string]any{"a": 1},
			Meta: mcp.Meta{mcpapi.MCPMetaIdempotencyKey: "mcp-key"}})
		if err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		return res
	}
	if r := call(); r.IsError || r.Meta[mcpapi.MCPMetaReplayed] != nil || resultText(r) != "mcp result" {
		t.Fatalf("first call = %+v; want the result, not replayed", r)
	}
	if r := call(); r.IsError || r.Meta[mcpapi.MCPMetaReplayed] != true || resultText(r) != "mcp result" {
		t.Fatalf("second call = %+v (_meta %v); want the stored result, _meta[%q] true", r, r.Meta, mcpapi.MCPMetaReplayed)
	}
	if n := tool.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once", n)
	}
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fleetTool, Arguments: map[string]any{"a": 1}, Meta: mcp.Meta{mcpapi.MCPMetaIdempotencyKey: 7}})
	if err == nil {
		t.Errorf("a non-string key was accepted; want invalid params (ignoring it would run the call twice)")
	}
	lines, _ := auditLines(t, env, audit)
	var replayed, ran int
	for _, l := range lines {
		if l["idempotency_key"] != "mcp-key" {
			continue
		}
		if l["replayed"] == true {
			replayed++
			if l["backend_code"] != nil {
				t.Errorf("replayed line %v has a backend_code; want none (the backend was not called)", l)
			}
		} else {
			ran++
		}
	}
	if replayed != 1 || ran != 1 {
		t.Errorf("audit: %d replayed and %d run lines for the key; want 1 and 1:\n%v", replayed, ran, lines)
	}
}
