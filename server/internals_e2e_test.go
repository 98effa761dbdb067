package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
)

// keyOps holds both roles: it manages tools and reads them, backends
// included.
const keyOps = "fd_e2e_ops_90d1f2aa"

func internalsPolicy() server.PolicyConfig {
	p := testPolicy(nil)
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "ops", SHA256: policy.HashAPIKey(keyOps), Roles: []string{policy.RoleAdmin, policy.RoleInvoker}})
	return p
}

// statusText is everything a caller receives in a status: code, message
// and every detail.
func statusText(err error) string { return prototext.Format(status.Convert(err).Proto()) }

// TestBackendInternalsStayInternal: a backend that is down answers
// Unavailable on gRPC and an isError result on MCP, neither naming its
// address, which the log line has.
func TestBackendInternalsStayInternal(t *testing.T) {
	t.Parallel()
	down := gatewaytest.ClosedAddr(t)
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(internalsPolicy()), gatewaytest.WithMCP(),
		gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("down")(down) }),
		gatewaytest.WithConfig(func(c *server.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) }))
	ctx := testCtx(t)

	_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "down"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("InvokeTool(down) = %v; want Unavailable", err)
	}
	host := down[:strings.LastIndex(down, ":")]
	if text := statusText(err); strings.Contains(text, down) || strings.Contains(text, host) {
		t.Errorf("the gRPC status names the backend %s:\n%s", down, text)
	}
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "down", Arguments: map[string]any{}})
	if err != nil || !res.IsError || strings.Contains(resultText(res), down) {
		t.Errorf("tools/call(down) = %+v, %v; want an isError result not naming %s", res, err, down)
	}
	if !strings.Contains(logs.String(), down) {
		t.Errorf("no log line names the unreachable backend %s; operators need it:\n%s", down, logs.String())
	}
}

// TestBackendDebugInfoStripped: a backend's google.rpc.DebugInfo does not
// reach the caller unless backend_errors.pass_debug_info is set; its other
// details always do.
func TestBackendDebugInfoStripped(t *testing.T) {
	t.Parallel()
	leaky := func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		st, _ := status.New(codes.FailedPrecondition, "note store is read-only").WithDetails(
			&errdetails.ErrorInfo{Reason: "READ_ONLY", Domain: "notes.example"},
			&errdetails.DebugInfo{StackEntries: []string{"/srv/notes/internal/store.go:88"}, Detail: "primary at 10.9.8.7:5432"})
		return nil, st.Err()
	}
	for _, tc := range []struct {
		name      string
		pass      bool
		wantDebug bool
		reason    string
	}{
		{"default", false, false, "DebugInfo carries stacks and internals: removed by default"},
		{"passed", true, true, "backend_errors.pass_debug_info keeps it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := internalsPolicy()
			p.BackendErrors.PassDebugInfo = tc.pass
			env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithTool(gatewaytest.ObjectTool("leaky")),
				gatewaytest.WithBackendHandler("leaky", leaky))
			_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "leaky"})
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("InvokeTool(leaky) = %v; want the backend's FailedPrecondition", err)
			}
			var debug, info bool
			for _, d := range status.Convert(err).Details() {
				switch d.(type) {
				case *errdetails.DebugInfo:
					debug = true
				case *errdetails.ErrorInfo:
					info = true
				}
			}
			if debug != tc.wantDebug || !info {
				t.Errorf("details: DebugInfo %v, ErrorInfo %v; want DebugInfo %v and the ErrorInfo kept (%s)", debug, info, tc.wantDebug, tc.reason)
			}
		})
	}
}

// TestRegistryReadsShowBackendsToAdminsOnly: GetTool, ListTools and
// WatchTools give an invoker an empty backend and a caller holding the
// admin role the target.
func TestRegistryReadsShowBackendsToAdminsOnly(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(internalsPolicy()))
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tc := range []struct {
		name, key, want, reason string
	}{
		{"invoker", keyInvoker, "", "an invoker needs the tool, not where it runs"},
		{"admin", keyOps, env.BackendAddr, "an admin registered the target and may read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(withKey(tc.key))
			defer cancel()
			got, err := reg.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "create_note"})
			if err != nil || got.GetTool().GetBackend() != tc.want {
				t.Errorf("GetTool backend = %q, %v; want %q (%s)", got.GetTool().GetBackend(), err, tc.want, tc.reason)
			}
			list, err := reg.ListTools(ctx, &gatewayv1.ListToolsRequest{})
			if err != nil || len(list.GetTools()) == 0 {
				t.Fatalf("ListTools = %v, %v", list, err)
			}
			for _, tl := range list.GetTools() {
				if tl.GetBackend() != tc.want {
					t.Errorf("ListTools %s backend = %q; want %q (%s)", tl.GetName(), tl.GetBackend(), tc.want, tc.reason)
				}
			}
			w, err := reg.WatchTools(ctx, &gatewayv1.WatchToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := w.Recv()
			if err != nil || ev.GetTool().GetBackend() != tc.want {
				t.Errorf("WatchTools first event backend = %q, %v; want %q (%s)", ev.GetTool().GetBackend(), err, tc.want, tc.reason)
			}
		})
	}
}

// TestStoreFailureHidesPaths: RegisterTool on a bolt store whose
// filesystem is full (a small tmpfs, filled) answers Unavailable or
// Internal without the data directory's path; the log has the cause.
func TestStoreFailureHidesPaths(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mounting a tmpfs needs root (CI runs as root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) }) // after the gateway's own cleanup
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(internalsPolicy()), gatewaytest.WithConfig(func(c *server.Config) {
		c.Store = server.StoreConfig{Kind: server.StoreBolt, DataDir: dir}
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	fill(t, filepath.Join(dir, "filler"))

	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	// ~256 KiB, so the store's file must grow: within the registry's bounds
	// (64 KiB descriptions, 1 MiB schemas), the bulk in the schema.
	tool := &gatewayv1.Tool{Name: "big_note", Backend: env.BackendAddr, Description: strings.Repeat("d", 56<<10),
		InputSchema: gatewaytest.Args(t, map[string]any{"type": "object", "description": strings.Repeat("s", 200<<10)})}
	_, err := reg.RegisterTool(withKey(keyAdmin), &gatewayv1.RegisterToolRequest{Tool: tool})
	t.Logf("RegisterTool on a full disk: %v", err)
	code := status.Code(err)
	if code != codes.Unavailable && code != codes.Internal {
		t.Fatalf("RegisterTool on a full disk = %v; want Unavailable or Internal", err)
	}
	if text := statusText(err); strings.Contains(text, dir) || strings.Contains(text, "registry.db") {
		t.Errorf("the status names the store's file:\n%s", text)
	}
	if !strings.Contains(logs.String(), "flowdrop.cause") {
		t.Errorf("the log has no cause of the store failure:\n%s", logs.String())
	}
}

// fill writes path until its filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for range 1 << 12 { // bounded: 16 MiB, far over the 1 MiB tmpfs
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
	t.Fatal("the tmpfs never filled up")
}
