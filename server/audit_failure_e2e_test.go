package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/internal/testfs"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// smallTmpfs mounts a 64 KiB tmpfs on a fresh directory (unmounted at
// cleanup, after everything registered later, such as the gateway). It
// needs root: outside CI a non-root run skips; with CI=true it fails, so
// CI (.ci/run runs as root) always runs it.
func smallTmpfs(t *testing.T) string { return testfs.Tmpfs(t, "64k") }

// fillUp writes filler into dir until the filesystem is full (ENOSPC).
func fillUp(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("x"), 1024)
	for range 1024 { // 64 KiB fills in 64 writes; bounded anyway
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
	t.Fatal("the tmpfs never filled up")
	return ""
}

func readyz(t *testing.T, env *gatewaytest.Env) (int, string) {
	t.Helper()
	resp, err := http.Get(env.AdminURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func auditDropped(t *testing.T, env *gatewaytest.Env) float64 {
	t.Helper()
	return sample(scrape(t, env.AdminURL), "flowdrop_audit_dropped_total", nil)
}

// awaitReady waits (at most 10 s) until /readyz answers 200.
func awaitReady(t *testing.T, env *gatewaytest.Env, when string) {
	t.Helper()
	if err := poll(10*time.Second, func() error {
		if code, _ := readyz(t, env); code != http.StatusOK {
			return fmt.Errorf("/readyz stayed %d %s", code, when)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// grpcHealth is the gateway's gRPC health of "", ToolGatewayService and
// ToolRegistryService, in that order.
func grpcHealth(t *testing.T, ctx context.Context, env *gatewaytest.Env) [3]healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	var got [3]healthpb.HealthCheckResponse_ServingStatus
	for i, svc := range []string{"", gatewayv1.ToolGatewayService_ServiceDesc.ServiceName, gatewayv1.ToolRegistryService_ServiceDesc.ServiceName} {
		resp, err := healthpb.NewHealthClient(env.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("health check %q: %v", svc, err)
		}
		got[i] = resp.GetStatus()
	}
	return got
}

// awaitHealth polls grpcHealth until it is want (bounded: 5 s).
func awaitHealth(t *testing.T, ctx context.Context, env *gatewaytest.Env, want [3]healthpb.HealthCheckResponse_ServingStatus, reason string) {
	t.Helper()
	for i := 0; ; i++ {
		got := grpcHealth(t, ctx, env)
		if got == want {
			return
		}
		if i == 100 {
			t.Fatalf("gRPC health (\"\", ToolGatewayService, ToolRegistryService) = %v; want %v (%s)", got, want, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func auditEnv(t *testing.T, dir, onFailure string, logs io.Writer) *gatewaytest.Env {
	t.Helper()
	p := server.DemoPolicy()
	p.Audit = server.AuditConfig{Path: filepath.Join(dir, "audit.jsonl"), OnFailure: onFailure}
	return gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithMCP(),
		gatewaytest.WithLogOutput(logs))
}

func noteCall(t *testing.T, id string) *gatewayv1.InvokeToolRequest {
	return &gatewayv1.InvokeToolRequest{Tool: "create_note", CallId: id, Arguments: gatewaytest.Args(t, map[string]any{"title": "t"})}
}

// TestAuditFailClosedOnFullDisk: with the audit file's filesystem full and
// audit.on_failure left at its default (fail-closed), no call completes
// unaudited: the call whose line fails has its result withheld, later calls
// are refused before reaching a backend (gRPC and MCP), the loss is counted
// and logged once, /readyz is 503 with the reason; after space is freed the
// gateway recovers by itself and the file marks the gap.
func TestAuditFailClosedOnFullDisk(t *testing.T) {
	dir := smallTmpfs(t)
	var logs syncBuffer
	env := auditEnv(t, dir, "", &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filler := fillUp(t, dir)

	refused := func(what string, err error, wantRetry bool) {
		t.Helper()
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "audit log unavailable") {
			t.Fatalf("%s: %v; want Unavailable \"audit log unavailable\"", what, err)
		}
		if strings.Contains(st.Message(), dir) || strings.Contains(st.Message(), "no space") {
			t.Errorf("%s: the message names the file or its error: %q", what, st.Message())
		}
		var retry bool
		for _, d := range st.Details() {
			_, ok := d.(*errdetails.RetryInfo)
			retry = retry || ok
		}
		if retry != wantRetry {
			t.Errorf("%s: RetryInfo present = %v, want %v (only a call that did not run may be retried blindly)", what, retry, wantRetry)
		}
	}
	// The first call reaches its backend; its line cannot be written, so
	// its result is withheld.
	_, err := env.Client.InvokeTool(ctx, noteCall(t, "c-withheld"))
	refused("call whose own line fails", err, false)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "withheld") || !strings.Contains(msg, "may have run") {
		t.Errorf("withheld result's message %q must say the tool may have run", msg)
	}
	if n := len(env.Backend.CallsFor("create_note")); n != 1 {
		t.Fatalf("backend calls = %d, want 1 (the withheld call ran)", n)
	}
	// From now on calls are refused up front: the backend sees none.
	for i := range 3 {
		_, err := env.Client.InvokeTool(ctx, noteCall(t, "c-refused"))
		refused("call while the audit log is failing #"+string(rune('1'+i)), err, true)
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "t"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "audit log unavailable") {
		t.Fatalf("MCP tools/call while failing = %v, %v; want isError \"audit log unavailable\"", resultText(res), err)
	}
	if n := len(env.Backend.CallsFor("create_note")); n != 1 {
		t.Fatalf("backend calls = %d, want still 1: refused calls must not reach the backend", n)
	}
	// A refused call's line is dropped by the audit writer, which may count
	// it just after the call has answered.
	if err := poll(5*time.Second, func() error {
		if got := auditDropped(t, env); got < 5 {
			return fmt.Errorf("flowdrop_audit_dropped_total = %v, want >= 5 (every call's line was lost)", got)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if n := strings.Count(logs.String(), "audit log write failed"); n != 1 || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("want exactly one ERROR line for the failures (rate-limited), got %d:\n%s", n, logs.String())
	}
	code, body := readyz(t, env)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "audit log cannot be written") || strings.Contains(body, dir) {
		t.Errorf("/readyz while failing = %d %q; want 503 with the reason and no path", code, body)
	}
	awaitHealth(t, ctx, env, [3]healthpb.HealthCheckResponse_ServingStatus{notServing, notServing, serving},
		"every call is refused, so gRPC health says so as /readyz does; the registry still serves")
	// A registry write is refused too: no change is made that could not be
	// recorded.
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	_, err = rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: auditedTool(t, "unrecorded_tool", env.BackendAddr)})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "audit log unavailable") {
		t.Errorf("RegisterTool while the audit log fails: %v; want Unavailable \"audit log unavailable\"", err)
	}
	if _, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "unrecorded_tool"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetTool of the refused registration: %v; want NotFound (nothing was registered)", err)
	}

	// Space comes back: the sink notices by itself (no call needed, a
	// drained gateway gets none) and the gateway is ready again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitReady(t, env, "after space was freed")
	awaitHealth(t, ctx, env, [3]healthpb.HealthCheckResponse_ServingStatus{serving, serving, serving},
		"the audit log writes again")
	if _, err := env.Client.InvokeTool(ctx, noteCall(t, "c-after")); err != nil {
		t.Fatalf("call after recovery: %v", err)
	}
	if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: auditedTool(t, "recorded_tool", env.BackendAddr)}); err != nil {
		t.Fatalf("RegisterTool after recovery: %v", err)
	}
	if !strings.Contains(logs.String(), "audit log writable again") {
		t.Errorf("no recovery line logged:\n%s", logs.String())
	}

	lines, raw := auditLines(t, env, filepath.Join(dir, "audit.jsonl"))
	var gap, after, registered bool
	for _, l := range lines {
		if l["reason"] == policy.ReasonAuditGap {
			gap = true
			if n, _ := l["records_dropped"].(float64); n < 5 {
				t.Errorf("audit-gap line records_dropped = %v, want >= 5", l["records_dropped"])
			}
		}
		after = after || l["call_id"] == "c-after"
		registered = registered || (l["operation"] == "RegisterTool" && l["tool"] == "recorded_tool" && l["decision"] == "allow")
		if l["call_id"] == "c-withheld" || l["call_id"] == "c-refused" {
			t.Errorf("a line that failed to write appears after all: %v", l)
		}
	}
	if !gap || !after || !registered {
		t.Errorf("audit file lacks the gap line, the call or the registration after recovery:\n%s", raw)
	}
}

// TestAuditFailOpenOnFullDisk: with audit.on_failure: fail-open calls go on
// while the disk is full; the loss is counted and logged, /readyz stays 200.
func TestAuditFailOpenOnFullDisk(t *testing.T) {
	dir := smallTmpfs(t)
	var logs syncBuffer
	env := auditEnv(t, dir, server.AuditFailOpen, &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fillUp(t, dir)
	for range 5 {
		if _, err := env.Client.InvokeTool(ctx, noteCall(t, "c-open")); err != nil {
			t.Fatalf("fail-open call with a full disk: %v; want OK", err)
		}
	}
	// Writes are asynchronous under fail-open: wait (bounded) for the count.
	for i := 0; auditDropped(t, env) < 5; i++ {
		if i == 100 {
			t.Fatalf("flowdrop_audit_dropped_total = %v, want 5", auditDropped(t, env))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := readyz(t, env); code != http.StatusOK {
		t.Errorf("/readyz under fail-open = %d %q; want 200", code, body)
	}
	if got := grpcHealth(t, ctx, env); got != [3]healthpb.HealthCheckResponse_ServingStatus{serving, serving, serving} {
		t.Errorf("gRPC health under fail-open = %v; want all SERVING (calls go on)", got)
	}
	if !strings.Contains(logs.String(), "audit log write failed") {
		t.Errorf("no ERROR line for the failed writes:\n%s", logs.String())
	}
}

// TestFollowerWritesWaitForTheAuditLog: the gateway's own registry writes
// (following an upstream MCP server) are held to fail-closed audit as a
// caller's are: while the log cannot be written an upstream's removal of a
// tool is not even held (the tool stays as registered); once it writes
// again the next re-list holds the removal for approval, on record.
func TestFollowerWritesWaitForTheAuditLog(t *testing.T) {
	dir := smallTmpfs(t)
	var logs syncBuffer
	env := auditEnv(t, dir, "", &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := mcpupstreamtest.Start(t)
	importUpstream(t, ctx, env, up.URL, "", "up.")
	if err := poll(5*time.Second, func() error { // the follower's notification session
		if up.Listeners() == 0 {
			return errors.New("the gateway opened no notification stream to the upstream")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	filler := fillUp(t, dir)
	// Calls until one's line fails (the file's last page may have had room
	// for a few): from then on the sink is known to fail.
	for i := 0; ; i++ {
		_, err := env.Client.InvokeTool(ctx, noteCall(t, "c-fill"))
		if status.Code(err) == codes.Unavailable {
			break
		}
		if err != nil || i == 100 {
			t.Fatalf("call %d on a full disk: %v; want one Unavailable within 100", i, err)
		}
	}

	up.MCP.RemoveTools("refuse") // the upstream notifies list_changed
	const skipped = "the audit log cannot be written; the tool is left as registered"
	if err := poll(5*time.Second, func() error {
		if !strings.Contains(logs.String(), skipped) {
			return errors.New("the follower never met the failing audit log")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v:\n%s", err, logs.String())
	}
	if got, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "up.refuse"}); err != nil || len(got.GetTool().GetOrigin().GetPending()) != 0 {
		t.Fatalf("up.refuse while the audit log fails: %v, %v; want it registered as it was (no unrecorded change)", got, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitReady(t, env, "after space was freed")
	up.MCP.RemoveTools("wait") // another list_changed: the follower re-lists
	awaitPending(t, ctx, rc, "up.refuse", "removal")
	lines, raw := auditLines(t, env, filepath.Join(dir, "audit.jsonl"))
	var removed int
	for _, l := range lines {
		if l["operation"] == "HoldPendingChange" && l["tool"] == "up.refuse" && l["reason"] == "mcp-upstream-removed" && l["decision"] == "allow" &&
			l["caller_method"] == policy.MethodInternal {
			removed++
		}
	}
	if removed != 1 {
		t.Errorf("%d audit lines for the follower's hold of up.refuse's removal, want 1:\n%s", removed, raw)
	}
}
