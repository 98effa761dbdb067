package server_test

// End-to-end tests: a real gateway and the real example tool service over
// 127.0.0.1 TCP (internal/gatewaytest), called through the generated client.

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/grpcapi"
	"github.com/flowdrop/gateway/server/pipeline"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(stdioUpstreamEnv); mode != "" {
		os.Exit(serveStdioUpstream(mode)) // the test binary as a stdio MCP server
	}
	goleak.VerifyTestMain(m)
}

// testCtx bounds every call so a broken gateway fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNormalizedArgumentsReachTheBackend(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	cases := []struct {
		name    string
		reason  string
		tool    string
		args    map[string]any
		want    map[string]any // what the backend must receive
		repairs []*gatewayv1.Repair
	}{
		{
			name:   "double-escaped-title",
			reason: "RT-TOOL-8 clause 4: entity decoding repeats until stable, so &amp;amp; resolves fully to &",
			tool:   "create_note",
			args:   map[string]any{"title": "Ember &amp;amp; Oak"},
			want:   map[string]any{"title": "Ember & Oak"},
			repairs: []*gatewayv1.Repair{
				{Path: "/title", Kind: gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED, Passes: 2},
			},
		},
		{
			name:   "stringified-array",
			reason: "clause 2: tags is declared array and the string parses to a list, so the tool gets a list",
			tool:   "create_note",
			args:   map[string]any{"title": "t", "tags": `["a","b"]`},
			want:   map[string]any{"title": "t", "tags": []any{"a", "b"}},
			repairs: []*gatewayv1.Repair{
				{Path: "/tags", Kind: gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED},
			},
		},
		{
			name:   "stringified-ops-with-escaped-value",
			reason: "both repairs compose: ops is JSON-decoded, then the string leaf inside it is entity-decoded",
			tool:   "apply_ops",
			args:   map[string]any{"ops": `[{"op":"add","path":"/a","value":"x &amp;lt; y"}]`},
			want:   map[string]any{"ops": []any{map[string]any{"op": "add", "path": "/a", "value": "x < y"}}},
			repairs: []*gatewayv1.Repair{
				{Path: "/ops", Kind: gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED},
				{Path: "/ops/0/value", Kind: gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED, Passes: 2},
			},
		},
		{
			name:   "stringified-object",
			reason: "settings is declared object and the string parses to a map",
			tool:   "update_settings",
			args:   map[string]any{"settings": `{"theme":"dark"}`},
			want:   map[string]any{"settings": map[string]any{"theme": "dark"}},
			repairs: []*gatewayv1.Repair{
				{Path: "/settings", Kind: gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED},
			},
		},
		{
			name:   "clean-arguments",
			reason: "arguments that need no repair reach the tool exactly as sent, with no repairs reported",
			tool:   "create_note",
			args:   map[string]any{"title": "plain & simple", "tags": []any{"x"}, "body": "?a=1&copy=2"},
			want:   map[string]any{"title": "plain & simple", "tags": []any{"x"}, "body": "?a=1&copy=2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			callID := "call-" + tc.name
			resp, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: tc.tool, Arguments: gatewaytest.Args(t, tc.args), CallId: callID,
			})
			if err != nil {
				t.Fatalf("InvokeTool: %v (%s)", err, tc.reason)
			}
			var got *structpb.Struct
			for _, c := range env.Backend.CallsFor(tc.tool) {
				if c.Request.GetCallId() == callID {
					got = c.Request.GetArguments()
				}
			}
			if got == nil {
				t.Fatalf("backend never received call %q", callID)
			}
			if diff := cmp.Diff(gatewaytest.Args(t, tc.want), got, protocmp.Transform()); diff != "" {
				t.Errorf("backend received (-want +got):\n%s\nreason: %s", diff, tc.reason)
			}
			if diff := cmp.Diff(tc.repairs, resp.GetRepairs(), protocmp.Transform()); diff != "" {
				t.Errorf("repairs (-want +got):\n%s\nreason: %s", diff, tc.reason)
			}
			// The echo result carries the arguments too: the response is the backend's.
			echoed := resp.GetResult().GetStructValue().GetFields()["arguments"].GetStructValue()
			if !proto.Equal(echoed, got) {
				t.Errorf("result does not carry the backend's echo: %v", resp.GetResult())
			}
		})
	}
}

// invalidDetails unpacks the details of an InvalidArgument status.
func invalidDetails(t *testing.T, err error) (*errdetails.BadRequest, *errdetails.ErrorInfo, []*gatewayv1.Repair) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code = %v (%v), want InvalidArgument", st.Code(), err)
	}
	var (
		br      *errdetails.BadRequest
		info    *errdetails.ErrorInfo
		repairs []*gatewayv1.Repair
	)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			br = d
		case *errdetails.ErrorInfo:
			info = d
		case *gatewayv1.Repair:
			repairs = append(repairs, d)
		}
	}
	if br == nil || info == nil {
		t.Fatalf("missing BadRequest or ErrorInfo in details: %v", st.Details())
	}
	return br, info, repairs
}

func TestInvalidArgumentsAreRefusedBeforeTheBackend(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	cases := []struct {
		name        string
		reason      string
		tool        string
		args        map[string]any
		field       string   // the BadRequest violation's field
		msgContains []string // in the status message and the violation
		repairs     []string // ErrorInfo metadata values, "kind:pointer"
	}{
		{
			name:        "object-literal-for-array",
			reason:      "RT-TOOL-8 example: a string holding an object is never substituted for an array; validation reports ops",
			tool:        "apply_ops",
			args:        map[string]any{"ops": `{"op":"add"}`},
			field:       "/ops",
			msgContains: []string{"ops", "array"},
		},
		{
			name:        "repairs-reported-with-the-refusal",
			reason:      "the model must learn what was already repaired when the call is refused for another argument",
			tool:        "create_note",
			args:        map[string]any{"title": "Ember &amp;amp; Oak", "tags": `{"a":1}`},
			field:       "/tags",
			msgContains: []string{"tags", "array"},
			repairs:     []string{"entities-decoded:/title"},
		},
		{
			name:        "fractional-integer",
			reason:      "integer values must be whole",
			tool:        "run_command",
			args:        map[string]any{"command": "ls", "timeout_seconds": 1.5},
			field:       "/timeout_seconds",
			msgContains: []string{"timeout_seconds"},
		},
		{
			name:        "non-finite-number",
			reason:      "a Struct can carry ±Infinity and NaN, JSON cannot: refused even where the schema would not look",
			tool:        "run_command",
			args:        map[string]any{"command": "ls", "timeout_seconds": math.Inf(1)},
			field:       "/timeout_seconds",
			msgContains: []string{"timeout_seconds", "finite"},
		},
		{
			name:        "missing-required",
			reason:      "a required parameter that is absent is named",
			tool:        "create_note",
			args:        map[string]any{"body": "no title"},
			msgContains: []string{"title"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.Backend.CallsFor(tc.tool))
			_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: tc.tool, Arguments: gatewaytest.Args(t, tc.args),
			})
			br, info, repairs := invalidDetails(t, err)
			msg := status.Convert(err).Message()
			for _, s := range tc.msgContains {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q (%s)", msg, s, tc.reason)
				}
			}
			if tc.field != "" {
				var found bool
				for _, v := range br.GetFieldViolations() {
					if v.GetField() == tc.field {
						found = true
						if v.GetDescription() == "" {
							t.Errorf("violation %s has no description", tc.field)
						}
					}
				}
				if !found {
					t.Errorf("no violation for %s in %v (%s)", tc.field, br.GetFieldViolations(), tc.reason)
				}
			}
			if info.GetReason() != grpcapi.ReasonArgumentsInvalid || info.GetDomain() != grpcapi.ErrorDomain || info.GetMetadata()["tool"] != tc.tool {
				t.Errorf("ErrorInfo = %v", info)
			}
			var gotRepairs []string
			for k, v := range info.GetMetadata() {
				if strings.HasPrefix(k, "repair_") {
					gotRepairs = append(gotRepairs, v)
				}
			}
			if diff := cmp.Diff(tc.repairs, gotRepairs); diff != "" {
				t.Errorf("ErrorInfo repairs (-want +got):\n%s", diff)
			}
			if len(repairs) != len(tc.repairs) {
				t.Errorf("got %d Repair details, want %d", len(repairs), len(tc.repairs))
			}
			if after := len(env.Backend.CallsFor(tc.tool)); after != before {
				t.Errorf("backend was called %d times for a refused call (%s)", after-before, tc.reason)
			}
		})
	}
}

func TestUnknownToolIsNotFound(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "no_such_tool"})
	st := status.Convert(err)
	if st.Code() != codes.NotFound || st.Message() != `tool "no_such_tool" is not registered` {
		t.Fatalf("got %v %q, want NotFound naming the tool", st.Code(), st.Message())
	}
	if n := len(env.Backend.Calls()); n != 0 {
		t.Errorf("backend called %d times", n)
	}
}

func TestBackendErrors(t *testing.T) {
	t.Parallel()
	down := gatewaytest.ClosedAddr(t)
	env := gatewaytest.Start(t,
		gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("down")(down) }),
		gatewaytest.WithTool(gatewaytest.ObjectTool("slow")),
		gatewaytest.WithTool(func(b string) registry.Tool {
			tl := gatewaytest.ObjectTool("slow_timeout")(b)
			tl.Timeout = 100 * time.Millisecond
			return tl
		}),
		gatewaytest.WithTool(gatewaytest.ObjectTool("panics")),
		gatewaytest.WithTool(gatewaytest.ObjectTool("precondition")),
		gatewaytest.WithBackendHandler("slow", waitForCancel),
		gatewaytest.WithBackendHandler("slow_timeout", waitForCancel),
		gatewaytest.WithBackendHandler("panics", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			panic("backend bug")
		}),
		gatewaytest.WithBackendHandler("precondition", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			st, _ := status.New(codes.FailedPrecondition, "note store is read-only").WithDetails(&errdetails.ErrorInfo{
				Reason: "READ_ONLY", Domain: "notes.example", Metadata: map[string]string{"k": "v"},
			})
			return nil, st.Err()
		}),
	)
	cases := []struct {
		name        string
		reason      string
		tool        string
		deadline    time.Duration // caller's deadline; 0: none (a 10s cancel still bounds the call)
		code        codes.Code
		msgContains []string
	}{
		{
			name:        "backend-down",
			reason:      "an unreachable backend is Unavailable naming the tool, not a generic error (the target is for the log: TestBackendInternalsStayInternal)",
			tool:        "down",
			code:        codes.Unavailable,
			msgContains: []string{`tool "down"`, "unavailable"},
		},
		{
			// The gateway forwards the caller's deadline as is, so the caller's
			// own client usually reports the expiry first: assert the code only.
			name:     "caller-deadline",
			reason:   "the caller's deadline bounds the backend call: DeadlineExceeded within it, not a hang",
			tool:     "slow",
			deadline: 200 * time.Millisecond,
			code:     codes.DeadlineExceeded,
		},
		{
			name:        "tool-timeout",
			reason:      "without a caller deadline the tool's own timeout applies",
			tool:        "slow_timeout",
			code:        codes.DeadlineExceeded,
			msgContains: []string{`tool "slow_timeout"`, "100ms", "tool's timeout"},
		},
		{
			name:        "backend-panic",
			reason:      "the backend's own recovery turns its panic into Internal, which passes through unchanged",
			tool:        "panics",
			code:        codes.Internal,
			msgContains: []string{"example tools: internal error"},
		},
		{
			name:        "backend-status",
			reason:      "a backend's own status (code and message) passes through unchanged",
			tool:        "precondition",
			code:        codes.FailedPrecondition,
			msgContains: []string{"note store is read-only"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Cancel, not a deadline, bounds the test, so "no caller deadline" holds.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			defer time.AfterFunc(10*time.Second, cancel).Stop()
			if tc.deadline > 0 {
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: &structpb.Struct{}})
			st := status.Convert(err)
			if st.Code() != tc.code {
				t.Fatalf("code = %v (%q), want %v (%s)", st.Code(), st.Message(), tc.code, tc.reason)
			}
			for _, s := range tc.msgContains {
				if !strings.Contains(st.Message(), s) {
					t.Errorf("message %q lacks %q (%s)", st.Message(), s, tc.reason)
				}
			}
		})
	}

	t.Run("backend-details-pass-through", func(t *testing.T) {
		_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "precondition"})
		details := status.Convert(err).Details()
		want := &errdetails.ErrorInfo{Reason: "READ_ONLY", Domain: "notes.example", Metadata: map[string]string{"k": "v"}}
		if len(details) != 1 || !proto.Equal(details[0].(proto.Message), want) {
			t.Errorf("details = %v, want the backend's %v", details, want)
		}
	})

	t.Run("serving-after-panic", func(t *testing.T) {
		if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
			Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "after"}),
		}); err != nil {
			t.Fatalf("call after a backend panic failed: %v", err)
		}
	})
}

// waitForCancel blocks until the call's context ends: a backend slower than
// any deadline, without a fixed sleep.
func waitForCancel(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func TestPanicInGatewayPipelineIsInternal(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) {
		c.StageHook = func(stage string, c *pipeline.Call) {
			if stage == "normalize" && c.Tool == "create_note" {
				panic("normalize bug with secret argument value")
			}
		}
	}))
	_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
		Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "x"}),
	})
	st := status.Convert(err)
	if st.Code() != codes.Internal {
		t.Fatalf("code = %v, want Internal", st.Code())
	}
	if strings.Contains(st.Message(), "secret") || strings.Contains(st.Message(), "goroutine") {
		t.Errorf("panic value or stack leaked to the client: %q", st.Message())
	}
	if n := len(env.Backend.Calls()); n != 0 {
		t.Errorf("backend called %d times after a pipeline panic", n)
	}
	// The server keeps serving.
	if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
		Tool: "update_settings", Arguments: gatewaytest.Args(t, map[string]any{"settings": map[string]any{}}),
	}); err != nil {
		t.Fatalf("call after a pipeline panic failed: %v", err)
	}
}

func TestToolLevelFailureIsAResultNotAnError(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	resp, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
		Tool: "run_command", Arguments: gatewaytest.Args(t, map[string]any{"command": "false"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetIsError() || !strings.Contains(resp.GetResult().GetStringValue(), "status 1") {
		t.Errorf("got %v, want is_error with the tool's message", resp)
	}
}

func TestMetadataAndDeadlinePropagation(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		deadlines []time.Duration
	)
	record := func(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		d, ok := ctx.Deadline()
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			deadlines = append(deadlines, -1)
		} else {
			deadlines = append(deadlines, time.Until(d))
		}
		return &gatewayv1.InvokeResponse{Result: structpb.NewNullValue()}, nil
	}
	env := gatewaytest.Start(t,
		gatewaytest.WithConfig(func(c *server.Config) { c.DefaultTimeout = 3 * time.Second }),
		gatewaytest.WithTool(gatewaytest.ObjectTool("record")),
		gatewaytest.WithBackendHandler("record", record),
	)

	// Caller without a deadline: the gateway default applies.
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate", "vendor=1",
		"x-request-id", "req-42",
		"x-not-propagated", "secret")
	if _, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "record", CallId: "call-7"}); err != nil {
		t.Fatal(err)
	}
	calls := env.Backend.CallsFor("record")
	if len(calls) != 1 {
		t.Fatalf("backend got %d calls", len(calls))
	}
	md := calls[0].Metadata
	for k, want := range map[string]string{
		backend.MDCallID:   "call-7",
		backend.MDCaller:   "anonymous",
		"traceparent":      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":       "vendor=1",
		"x-request-id":     "req-42",
		"x-not-propagated": "",
	} {
		got := strings.Join(md.Get(k), ",")
		if got != want {
			t.Errorf("backend metadata %s = %q, want %q", k, got, want)
		}
	}
	wantCaller := &gatewayv1.Caller{Subject: "anonymous", Method: "none"}
	if !proto.Equal(calls[0].Request.GetCaller(), wantCaller) {
		t.Errorf("InvokeRequest.caller = %v, want %v", calls[0].Request.GetCaller(), wantCaller)
	}

	// Caller with a deadline: that one is propagated.
	dctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := env.Client.InvokeTool(dctx, &gatewayv1.InvokeToolRequest{Tool: "record"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deadlines) != 2 {
		t.Fatalf("recorded %d deadlines", len(deadlines))
	}
	if d := deadlines[0]; d <= time.Second || d > 3*time.Second {
		t.Errorf("no caller deadline: backend budget %v, want the 3s default", d)
	}
	if d := deadlines[1]; d <= 0 || d > time.Second {
		t.Errorf("caller deadline 1s: backend budget %v, want at most 1s", d)
	}
}

func TestCancellationReachesTheBackend(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	ended := make(chan error, 1)
	env := gatewaytest.Start(t,
		gatewaytest.WithTool(gatewaytest.ObjectTool("wait")),
		gatewaytest.WithBackendHandler("wait", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			close(started)
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}),
	)
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "wait"})
		errc <- err
	}()
	<-started
	cancel()
	if code := status.Code(<-errc); code != codes.Canceled {
		t.Errorf("caller got %v, want Canceled", code)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("backend context ended with %v, want Canceled", err)
		}
	case <-testCtx(t).Done():
		t.Fatal("backend call was not canceled")
	}
}

func TestGracefulShutdownDrainsCallsInFlight(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	env := gatewaytest.Start(t,
		gatewaytest.WithTool(gatewaytest.ObjectTool("held")),
		gatewaytest.WithBackendHandler("held", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			close(started)
			select {
			case <-release:
				return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("done")}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
	)
	inflight := make(chan error, 1)
	go func() {
		resp, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: "held"})
		if err == nil && resp.GetResult().GetStringValue() != "done" {
			err = errors.New("unexpected result " + resp.String())
		}
		inflight <- err
	}()
	<-started

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- env.Gateway.Close(ctx)
	}()

	// New calls are refused once shutdown has begun. Bounded poll: the
	// shutdown goroutine needs a moment to close the listener.
	var refused bool
	for i := 0; i < 200 && !refused; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{
			Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "late"}),
		})
		cancel()
		if status.Code(err) == codes.Unavailable {
			refused = true
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !refused {
		t.Fatal("new calls were still accepted during shutdown")
	}

	close(release)
	if err := <-inflight; err != nil {
		t.Errorf("in-flight call did not complete: %v", err)
	}
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestHealthAndReflectionSkipThePipeline(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	resp, err := healthpb.NewHealthClient(env.Conn).Check(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v; want SERVING", resp, err)
	}
	resp, err = healthpb.NewHealthClient(env.Conn).Check(testCtx(t), &healthpb.HealthCheckRequest{
		Service: gatewayv1.ToolGatewayService_ServiceDesc.ServiceName,
	})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health(ToolGatewayService) = %v, %v; want SERVING", resp, err)
	}

	// Reflection (what grpcurl uses) lists the gateway service.
	stream, err := reflectionpb.NewServerReflectionClient(env.Conn).ServerReflectionInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	rresp, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection: %v", err)
	}
	stream.CloseSend()
	var names []string
	for _, s := range rresp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, gatewayv1.ToolGatewayService_ServiceDesc.ServiceName) {
		t.Errorf("reflection lists %v, want the gateway service among them", names)
	}
}

func TestMessageSizeLimits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64<<10)
	cases := []struct {
		name   string
		reason string
		cfg    func(*server.Config)
	}{
		{
			name:   "agent-to-gateway",
			reason: "the gateway's receive limit refuses an oversized request",
			cfg:    func(c *server.Config) { c.MaxRecvMsgSize = 16 << 10 },
		},
		{
			name:   "gateway-to-backend",
			reason: "the backend send limit stops an oversized forwarded request",
			cfg:    func(c *server.Config) { c.BackendMaxSendMsgSize = 16 << 10 },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := gatewaytest.Start(t, gatewaytest.WithConfig(tc.cfg))
			_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t", "body": big}),
			})
			if status.Code(err) != codes.ResourceExhausted {
				t.Errorf("got %v, want ResourceExhausted (%s)", err, tc.reason)
			}
			// A small call still works.
			if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
				Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t"}),
			}); err != nil {
				t.Errorf("small call: %v", err)
			}
		})
	}
}

func TestBackendConnectionsArePooledAndPruned(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	for i := 0; i < 3; i++ {
		if _, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{
			Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "t"}),
		}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{env.BackendAddr}, env.Gateway.BackendTargets()); diff != "" {
		t.Fatalf("pool after calls (-want +got):\n%s", diff)
	}
	// Remove every tool using the backend: its connection is closed.
	ctx := testCtx(t)
	tools, _, err := env.Store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if _, err := env.Store.Delete(ctx, tl.Name, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Bounded poll: the registry applies the deletions asynchronously.
	for i := 0; i < 500 && len(env.Gateway.BackendTargets()) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := env.Gateway.BackendTargets(); len(got) != 0 {
		t.Errorf("pool still holds %v after its tools were deleted", got)
	}
}
