package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
)

// streamEvents reads an InvokeToolStream call to its end: the progress
// events, the one result, and the status it ended with (nil: OK). A
// message after the result fails the test.
func streamEvents(t *testing.T, stream grpc.ServerStreamingClient[gatewayv1.InvokeToolStreamResponse]) (progress []*gatewayv1.ToolProgress, result *gatewayv1.InvokeToolResponse, err error) {
	t.Helper()
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return progress, result, nil
		}
		if err != nil {
			return progress, result, err
		}
		if result != nil {
			t.Fatalf("a message after the result: %v", ev)
		}
		switch e := ev.GetEvent().(type) {
		case *gatewayv1.InvokeToolStreamResponse_Progress:
			progress = append(progress, e.Progress)
		case *gatewayv1.InvokeToolStreamResponse_Result:
			result = e.Result
		default:
			t.Fatalf("an event that is neither progress nor result: %v", ev)
		}
	}
}

// TestInvokeToolStreamProgress: InvokeToolStream over real gRPC yields an
// upstream MCP server's progress for the call, then exactly one result,
// for server-everything's trigger-long-running-operation over streamable
// HTTP and over stdio; a backend without progress (the demo gRPC tool
// service) yields the result alone; a replayed idempotent call yields its
// stored result alone. A stdio upstream's progress reaches an MCP caller
// too (its notifications/progress for the caller's token).
func TestInvokeToolStreamProgress(t *testing.T) {
	t.Parallel()
	node, script := everythingNode(t)
	httpURL := startEverythingHTTP(t, node, script)
	p := server.DemoPolicy()
	p.MCPUpstreams.Stdio = map[string]mcpupstream.Command{"everything": {Path: node, Args: []string{script, "stdio"}}}
	imported := func(name, url string) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
			return registry.Tool{Name: name, InputSchema: schema, Origin: &registry.Origin{MCPUpstream: url},
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: url, Tool: "trigger-long-running-operation"}}}
		})
	}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p),
		imported("ev_long", httpURL), imported("st_long", "stdio://everything"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Four steps of 250 ms: each past the progress sink's rate interval.
	args, err := structpb.NewStruct(map[string]any{"duration": 1, "steps": 4})
	if err != nil {
		t.Fatal(err)
	}

	rows := []struct {
		name, reason, tool, key string
		wantProgress, replayed  bool
	}{
		{"http upstream", "an HTTP upstream's notifications/progress for the call are relayed as progress events", "ev_long", "", true, false},
		{"stdio upstream", "a stdio upstream's notifications/progress, routed by the gateway's token from the session, are relayed", "st_long", "", true, false},
		{"no progress", "a gRPC tool service reports no progress: the result alone", "create_note", "", false, false},
		{"idempotent first", "a keyed call runs and relays its progress", "ev_long", "stream-key-1", true, false},
		{"idempotent replay", "a replay of a keyed call is its stored result, alone", "ev_long", "stream-key-1", false, true},
	}
	for _, row := range rows {
		req := &gatewayv1.InvokeToolRequest{Tool: row.tool, Arguments: args, IdempotencyKey: row.key}
		if row.tool == "create_note" {
			req.Arguments, _ = structpb.NewStruct(map[string]any{"title": "streamed"})
		}
		stream, err := env.Client.InvokeToolStream(ctx, req)
		if err != nil {
			t.Fatalf("%s: InvokeToolStream: %v", row.name, err)
		}
		progress, result, err := streamEvents(t, stream)
		if err != nil || result == nil {
			t.Fatalf("%s: the stream ended with %v, result %v (%s)", row.name, err, result, row.reason)
		}
		if got := len(progress) > 0; got != row.wantProgress {
			t.Errorf("%s: %d progress events, want some: %v (%s)", row.name, len(progress), row.wantProgress, row.reason)
		}
		// The last step, sent just before the answer, is never lost (over
		// stdio it is taken off the connection before the answer).
		if row.wantProgress && len(progress) > 0 && progress[len(progress)-1].GetProgress() != 4 {
			t.Errorf("%s: the last progress event is %v, want step 4 of 4 (%s)", row.name, progress[len(progress)-1], row.reason)
		}
		for i, pr := range progress {
			if pr.GetTotal() != 4 || pr.GetProgress() < 1 || pr.GetProgress() > 4 || (i > 0 && pr.GetProgress() <= progress[i-1].GetProgress()) {
				t.Errorf("%s: progress event %d = %v, want increasing steps of 4", row.name, i, pr)
			}
		}
		if result.GetReplayed() != row.replayed || result.GetIsError() {
			t.Errorf("%s: result replayed=%v is_error=%v, want replayed=%v (%s)", row.name, result.GetReplayed(), result.GetIsError(), row.replayed, row.reason)
		}
		if row.tool != "create_note" && !strings.Contains(result.GetResult().GetStringValue(), "Long running operation completed") {
			t.Errorf("%s: result %v, want the operation's completion", row.name, result.GetResult())
		}
		t.Logf("%s: %d progress events", row.name, len(progress))
	}

	// The same stdio upstream's progress for an MCP caller.
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.MCPURL, HTTPClient: httpClient(t, nil), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "st_long", Arguments: map[string]any{"duration": 1, "steps": 4},
		Meta: mcp.Meta{"progressToken": "mcp-stdio"}})
	if err != nil || res.IsError {
		t.Fatalf("MCP call to st_long: %v %+v", err, res)
	}
	// The SDK's client may handle a notification after the call returned:
	// wait for all four steps, the last (sent just before the answer) too.
	if err := poll(10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		var steps []float64
		for _, p := range got {
			if p.ProgressToken == "mcp-stdio" && p.Total == 4 {
				steps = append(steps, p.Progress)
			}
		}
		if !slices.Equal(steps, []float64{1, 2, 3, 4}) {
			return fmt.Errorf("notifications/progress for the caller's token: steps %v, want 1 to 4", steps)
		}
		return nil
	}); err != nil {
		t.Errorf("a stdio upstream's progress did not reach the MCP caller: %v", err)
	}
}

// TestInvokeToolStreamPolicy: InvokeToolStream is no way around the
// policy: the callers InvokeTool refuses are refused on the stream with
// the same status, before the backend is called, each with its access
// line; a role table that names
// methods exactly opens the stream only where it names InvokeToolStream.
func TestInvokeToolStreamPolicy(t *testing.T) {
	t.Parallel()
	exact := testPolicy(nil)
	exact.Authz.MethodRoles = map[string][]string{
		"/flowdrop.gateway.v1.ToolGatewayService/InvokeTool": {policy.RoleInvoker},
		"/flowdrop.gateway.v1.ToolRegistryService/*":         {policy.RoleAdmin},
	}
	logs := &syncBuffer{}
	envs := map[string]*gatewaytest.Env{
		"default": gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)), gatewaytest.WithLogOutput(logs)),
		"exact":   gatewaytest.Start(t, gatewaytest.WithPolicy(exact)),
	}
	note, err := structpb.NewStruct(map[string]any{"title": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := structpb.NewStruct(map[string]any{"command": "ls"})
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name, reason, env, key, tool string
		args                         *structpb.Struct
		want                         codes.Code
	}{
		{"no credentials", "authentication runs on the stream", "default", "", "create_note", note, codes.Unauthenticated},
		{"unknown key", "a key the policy does not know", "default", "fd_unknown_key_0000", "create_note", note, codes.Unauthenticated},
		{"admin only", "the admin role does not invoke tools", "default", keyAdmin, "create_note", note, codes.PermissionDenied},
		{"denied tool", "the caller's deny list covers the tool", "default", keyLimited, "run_command", cmd, codes.PermissionDenied},
		{"rule", "the CEL rules run on the stream's arguments", "default", keyInvoker, "run_command",
			mustStructT(t, map[string]any{"command": "ls &amp;&amp; rm -rf /"}), codes.PermissionDenied},
		{"allowed", "an invoker's call goes through", "default", keyInvoker, "create_note", note, codes.OK},
		{"stream not in the table", "a table naming InvokeTool alone does not open InvokeToolStream", "exact", keyInvoker, "create_note", note, codes.PermissionDenied},
	}
	for _, row := range rows {
		env := envs[row.env]
		before := len(env.Backend.CallsFor(row.tool))
		ctx, cancel := context.WithTimeout(withKey(row.key), 10*time.Second)
		if row.key == "" {
			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		}
		stream, err := env.Client.InvokeToolStream(ctx, &gatewayv1.InvokeToolRequest{Tool: row.tool, Arguments: row.args})
		if err == nil {
			_, _, err = streamEvents(t, stream)
		}
		cancel()
		if got := status.Code(err); got != row.want {
			t.Errorf("%s: %v, want %v (%s)", row.name, err, row.want, row.reason)
		}
		called := len(env.Backend.CallsFor(row.tool)) - before
		if want := map[bool]int{true: 1, false: 0}[row.want == codes.OK]; called != want {
			t.Errorf("%s: the backend was called %d times, want %d (%s)", row.name, called, want, row.reason)
		}
	}
	// The access log has the stream's calls, refusals included, as
	// InvokeTool's.
	found := false
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "finished call") && strings.Contains(l, "InvokeToolStream") && strings.Contains(l, "server_stream") &&
			strings.Contains(l, "run_command") && strings.Contains(l, "PermissionDenied") {
			found = true
		}
	}
	if !found {
		t.Errorf("no access line for the denied stream call:\n%s", logs.String())
	}
	// The exact table still opens InvokeTool itself.
	if _, err := envs["exact"].Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: note}); err != nil {
		t.Errorf("InvokeTool under the exact table: %v", err)
	}
}

func mustStructT(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
