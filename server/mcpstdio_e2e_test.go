package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// stdioUpstreamEnv makes the test binary a stdio MCP server (TestMain):
// "serve" serves the tools below; "crash" exits at once; "prompts" serves
// servePromptsStdioUpstream; "asks" streamAskServer. Every start
// appends the process's pid to the file stdioStartsEnv names.
const (
	stdioUpstreamEnv = "FLOWDROP_TEST_STDIO_MCP"
	stdioStartsEnv   = "FLOWDROP_TEST_STDIO_STARTS"
)

// serveStdioUpstream is the stdio MCP server: echo (pid:text), env (the
// names in its environment), big (n bytes of text), forget (removes env)
// and crash (exits 3).
func serveStdioUpstream(mode string) int {
	if f, err := os.OpenFile(os.Getenv(stdioStartsEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintln(f, os.Getpid())
		f.Close()
	}
	fmt.Fprintf(os.Stderr, "stdio-helper %s: starting\n", mode)
	if mode == "crash" {
		return 3
	}
	if mode == "prompts" {
		return servePromptsStdioUpstream() // mcp_federation_cache_e2e_test.go
	}
	if mode == "caps" {
		// mcp_input_stdio_e2e_test.go: every revision, 2026-07-28 too.
		s := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b, _ := json.Marshal(req.Params.GetMeta()[mcp.MetaKeyClientCapabilities])
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Session.InitializeParams().ProtocolVersion + " " + string(b)}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			return 1
		}
		return 0
	}
	if mode == "asks" {
		// mcp_input_stdio_e2e_test.go
		if err := streamAskServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			return 1
		}
		return 0
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-helper", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid()) + ":" + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		var names []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			names = append(names, k)
		}
		slices.Sort(names)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(names, ",")}}}, nil, nil
	})
	type bigIn struct {
		N int `json:"n"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", min(in.N, 8<<20))}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "forget"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		s.RemoveTools("env") // its clients hear notifications/tools/list_changed
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "forgot env"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// starts is the pids of the stdio helper's starts so far.
func starts(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("starts file: %v", err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// running reports whether pid is a live process (not yet reaped).
func running(pid int) bool { return syscall.Kill(pid, 0) == nil }

// awaitExit waits (at most 5 s) until pid is gone and reaped.
func awaitExit(t *testing.T, pid int, when string) {
	t.Helper()
	if err := poll(5*time.Second, func() error {
		if running(pid) {
			return fmt.Errorf("process %d still runs %s", pid, when)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// awaitNotFound waits (at most 5 s) until the registry has no tool name.
func awaitNotFound(t *testing.T, ctx context.Context, rc gatewayv1.ToolRegistryServiceClient, name, when string) {
	t.Helper()
	if err := poll(5*time.Second, func() error {
		if _, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: name}); status.Code(err) != codes.NotFound {
			return fmt.Errorf("%s %s: %v; want it removed from the registry", name, when, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMCPStdioUpstream: a tool of a stdio MCP server the gateway runs
// (policy mcp_upstreams.stdio, the tool naming it stdio://NAME): one
// process serves concurrent calls; it sees only the environment the
// configuration gives (never the gateway's own); a crash is Unavailable
// naming the tool (never the command) and the next call starts it again,
// as it does after the process is killed between calls; its stderr is in
// the gateway's log;
// but a server that keeps crashing is started at most once a second; an
// answer over the backend receive limit is ResourceExhausted; a name not
// configured is Unavailable; a running server that drops a tool and says
// so has it dropped from the registry; deleting the last tool ends the
// process.
func TestMCPStdioUpstream(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	served, crashed := dir+"/served", dir+"/crashed"
	t.Setenv("FLOWDROP_TEST_PASSED", "passed-on")
	t.Setenv("FLOWDROP_TEST_GATEWAY_SECRET", "the-gateway's-own")
	p := server.DemoPolicy()
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{
		"helper": {Path: self, Env: map[string]string{stdioUpstreamEnv: "serve", stdioStartsEnv: served, "GIVEN": "yes"},
			PassEnv: []string{"FLOWDROP_TEST_PASSED", "FLOWDROP_TEST_UNSET"}},
		"crashy": {Path: self, Env: map[string]string{stdioUpstreamEnv: "crash", stdioStartsEnv: crashed}},
		"absent": {Path: dir + "/no-such-server"},
	}
	p.MCPUpstreams.AutoApprove = []string{registry.ChangeRemoval} // followed as imported tools, removals applied
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithLogOutput(&logs), gatewaytest.WithAdmin(),
		gatewaytest.WithConfig(func(c *server.Config) { c.BackendMaxRecvMsgSize = 64 << 10 }))
	ctx := testCtx(t)
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tl := range []struct{ name, url, tool string }{
		{"s.echo", "stdio://helper", "echo"}, {"s.env", "stdio://helper", "env"}, {"s.big", "stdio://helper", "big"},
		{"s.crash", "stdio://helper", "crash"}, {"s.forget", "stdio://helper", "forget"},
		{"s.crashy", "stdio://crashy", "echo"}, {"s.ghost", "stdio://nowhere", "echo"},
	} {
		schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
		tool := &gatewayv1.Tool{Name: tl.name, InputSchema: schema, Origin: &gatewayv1.ToolOrigin{McpUpstream: tl.url},
			Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: tl.url, Tool: tl.tool}}}}
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tl.name, err)
		}
	}
	call := func(name string, args map[string]any) (string, error) {
		resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: name, Arguments: gatewaytest.Args(t, args)})
		return resp.GetResult().GetStringValue(), err
	}
	pidOf := func(echoed string) int {
		pid, _ := strconv.Atoi(strings.SplitN(echoed, ":", 2)[0])
		return pid
	}

	// Concurrent calls share one process.
	var wg sync.WaitGroup
	answers := make([]string, 8)
	errs := make([]error, 8)
	for i := range answers {
		wg.Go(func() { answers[i], errs[i] = call("s.echo", map[string]any{"text": strconv.Itoa(i)}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || !strings.HasSuffix(answers[i], ":"+strconv.Itoa(i)) {
			t.Fatalf("echo %d: %q, %v", i, answers[i], err)
		}
	}
	first := pidOf(answers[0])
	for _, a := range answers {
		if pidOf(a) != first {
			t.Errorf("answers from processes %v; want one process for every call", answers)
			break
		}
	}
	if n := len(starts(t, served)); n != 1 {
		t.Errorf("the helper started %d times for 8 calls; want once", n)
	}

	names, err := call("s.env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(names, ",")
	for _, want := range []string{stdioUpstreamEnv, stdioStartsEnv, "GIVEN", "FLOWDROP_TEST_PASSED"} {
		if !slices.Contains(got, want) {
			t.Errorf("the process's environment %v lacks %s", got, want)
		}
	}
	for _, never := range []string{"FLOWDROP_TEST_GATEWAY_SECRET", "FLOWDROP_TEST_UNSET", "PATH", "HOME"} {
		if slices.Contains(got, never) {
			t.Errorf("the process's environment has %s: only what the configuration gives may reach it", never)
		}
	}

	if _, err := call("s.big", map[string]any{"n": 200 << 10}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("an answer of 200 KiB over a 64 KiB receive limit: %v; want ResourceExhausted", err)
	}
	if _, err := call("s.ghost", map[string]any{}); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "s.ghost") {
		t.Errorf("a stdio server not configured: %v; want Unavailable naming the tool", err)
	}

	// A crash: Unavailable naming the tool, never the command; then the
	// process is started again.
	_, err = call("s.crash", map[string]any{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "s.crash") || strings.Contains(err.Error(), self) {
		t.Errorf("a crashing call: %v; want Unavailable naming the tool and not the command", err)
	}
	awaitExit(t, first, "after it crashed")
	var again string
	if err := poll(4*time.Second, func() (err error) {
		again, err = call("s.echo", map[string]any{"text": "again"})
		return err
	}); err != nil {
		t.Fatalf("echo after the crash never answered: %v", err)
	}
	if pidOf(again) == first || len(starts(t, served)) != 2 {
		t.Errorf("after the crash: answered by %q, starts %v; want a second process", again, starts(t, served))
	}
	restarted := time.Now()

	// Killed between calls: reaped at once, and the next call (past the
	// restart gap) starts it again rather than failing on the dead one.
	second := pidOf(again)
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitExit(t, second, "killed between calls")
	time.Sleep(time.Until(restarted.Add(1100 * time.Millisecond)))
	if again, err = call("s.echo", map[string]any{"text": "after the kill"}); err != nil || pidOf(again) == second {
		t.Fatalf("the first call after the process was killed: %q, %v; want an answer from a new process", again, err)
	}

	// A server that exits at once is not started per call.
	begin := time.Now()
	for range 20 {
		if _, err := call("s.crashy", map[string]any{}); status.Code(err) != codes.Unavailable {
			t.Fatalf("a server that exits at start: %v; want Unavailable", err)
		}
	}
	if n, most := len(starts(t, crashed)), int(time.Since(begin)/time.Second)+1; n > most {
		t.Errorf("20 calls in %v started the crashing server %d times; want at most %d (once a second)", time.Since(begin), n, most)
	}

	// Every start is counted, by result; a configured server never started
	// has its series at 0.
	fams := scrape(t, env.AdminURL)
	for _, c := range []struct {
		server, result string
		want           float64
	}{
		{"helper", "ok", 3}, {"helper", "failed", 0},
		{"crashy", "ok", 0}, {"crashy", "failed", float64(len(starts(t, crashed)))},
		{"absent", "ok", 0}, {"absent", "failed", 0},
	} {
		if got := sample(fams, "flowdrop_mcp_stdio_starts_total", map[string]string{"server": c.server, "result": c.result}); got != c.want {
			t.Errorf("flowdrop_mcp_stdio_starts_total{server=%q,result=%q} = %v, want %v", c.server, c.result, got, c.want)
		}
	}

	// Its stderr is in the gateway's log (a server that fails to start can
	// be diagnosed).
	if l := logs.String(); !strings.Contains(l, `msg="mcp stdio server cannot run here: its tools will be unavailable" server=absent`) {
		t.Errorf("no start-up warning for a configured server whose executable is missing:\n%s", l)
	}
	const unconfigured = `msg="a tool names a stdio server this gateway does not run: its calls will be unavailable" tool=s.ghost server=nowhere`
	if n := strings.Count(logs.String(), unconfigured); n != 1 {
		t.Errorf("%d warnings for s.ghost naming a server not configured; want exactly 1 (once per revision):\n%s", n, logs.String())
	}
	if l := logs.String(); !strings.Contains(l, "mcp stdio server stderr") || !strings.Contains(l, "stdio-helper crash: starting") {
		t.Errorf("the gateway's log lacks the servers' stderr:\n%s", l)
	}
	if n := strings.Count(logs.String(), `msg="mcp stdio server started" server=helper`); n != 3 {
		t.Errorf("%d start lines for the helper; want 3 (the first start, after the crash, after the kill)", n)
	}

	// A running server is followed over the calls' own session: it drops
	// a tool and says so, and the registry drops it (the policy
	// auto-approves removals; the re-list interval is the default 30 s:
	// only the notification can do it in time).
	if _, err := call("s.forget", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	awaitNotFound(t, ctx, rc, "s.env", "after the server dropped env")
	if n := len(starts(t, served)); n != 3 {
		t.Errorf("the helper started %d times; want 3 (following it must not start another)", n)
	}

	// The last tool of the helper goes: its process ends.
	pid := pidOf(again)
	for _, name := range []string{"s.echo", "s.big", "s.crash", "s.forget"} {
		if _, err := rc.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	awaitExit(t, pid, "after its last tool was deleted")
}

// TestStdioServersEndWithTheGateway: closing the gateway ends the stdio
// servers it runs (and reaps them): none outlives it.
func TestStdioServersEndWithTheGateway(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := server.DemoPolicy()
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{
		"helper": {Path: self, Env: map[string]string{stdioUpstreamEnv: "serve", stdioStartsEnv: os.DevNull}}}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	ctx := testCtx(t)
	schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
	tool := &gatewayv1.Tool{Name: "s.echo", InputSchema: schema,
		Spec: &gatewayv1.BackendSpec{Kind: &gatewayv1.BackendSpec_McpTool{McpTool: &gatewayv1.McpTool{Url: "stdio://helper", Tool: "echo"}}}}
	if _, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
		t.Fatal(err)
	}
	resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "s.echo", Arguments: gatewaytest.Args(t, map[string]any{"text": "x"})})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.SplitN(resp.GetResult().GetStringValue(), ":", 2)[0])
	if pid <= 0 || !running(pid) {
		t.Fatalf("answer %q: want the running helper's pid", resp.GetResult().GetStringValue())
	}
	env.Gateway.Close(ctx)
	if running(pid) {
		t.Errorf("process %d still runs after the gateway closed", pid)
	}
}
