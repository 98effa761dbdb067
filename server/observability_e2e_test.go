package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	otelprop "go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample returns the counter value (or histogram count) of the series of
// family name whose labels include want; -1 if there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminMetricsAfterKnownCalls scrapes /metrics over HTTP after a
// repaired call, a validation failure and a policy denial.
func TestAdminMetricsAfterKnownCalls(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)), gatewaytest.WithAdmin())
	if got := httpStatus(t, env.AdminURL+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d", got)
	}
	if got := httpStatus(t, env.AdminURL+"/readyz"); got != http.StatusOK {
		t.Errorf("/readyz = %d", got)
	}
	if body := httpBody(t, env.AdminURL+"/readyz"); !strings.Contains(body, "version ") || !strings.Contains(body, "go1.") {
		t.Errorf("/readyz body %q: want the build's version", body)
	}
	if body := httpBody(t, env.AdminURL+"/metrics"); !strings.Contains(body, "flowdrop_build_info{") {
		t.Error("/metrics has no flowdrop_build_info")
	}
	invoke := func(tool string, args map[string]any) {
		env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
	}
	invoke("create_note", map[string]any{"title": "A &amp; B"})               // one entity repair, served
	invoke("apply_ops", map[string]any{"ops": `[{"op":"nope","path":"/a"}]`}) // repaired, then invalid
	invoke("run_command", map[string]any{"command": "ls && rm -rf /"})        // rule denial
	invoke("no_such_tool_"+time.Now().Format("150405"), map[string]any{})     // unknown tool: bounded label

	fams := scrape(t, env.AdminURL)
	checks := []struct {
		reason, name string
		labels       map[string]string
		want         float64
	}{
		{"the entity repair of create_note", "flowdrop_repairs_total", map[string]string{"tool": "create_note", "kind": normalize.EntitiesDecoded.String()}, 1},
		{"apply_ops' JSON repair before it failed validation", "flowdrop_repairs_total", map[string]string{"tool": "apply_ops", "kind": normalize.JSONDecoded.String()}, 1},
		{"the validation failure", "flowdrop_validation_failures_total", map[string]string{"tool": "apply_ops"}, 1},
		{"the rule denial", "flowdrop_policy_denials_total", map[string]string{"tool": "run_command", "reason": policy.ReasonRuleDenied}, 1},
		{"one backend call, for create_note", "flowdrop_backend_latency_seconds", map[string]string{"tool": "create_note", "code": "OK"}, 1},
		{"go-grpc-middleware's handled counter", "grpc_server_handled_total", map[string]string{"grpc_method": "InvokeTool", "grpc_code": "OK"}, 1},
		{"... and the refused calls", "grpc_server_handled_total", map[string]string{"grpc_method": "InvokeTool", "grpc_code": "PermissionDenied"}, 1},
		{"the handling-time histogram is on: all four calls", "grpc_server_handling_seconds", map[string]string{"grpc_method": "InvokeTool"}, 4},
		{"the time the gateway added, for the served call", "flowdrop_gateway_added_seconds", map[string]string{"tool": "create_note"}, 1},
		{"... and for the refused ones", "flowdrop_gateway_added_seconds", map[string]string{"tool": "run_command"}, 1},
		{"each stage's time: the caller stage ran for all four calls", "flowdrop_stage_seconds", map[string]string{"stage": "caller"}, 4},
		{"... normalize too (the unknown tool is refused there, by the lookup)", "flowdrop_stage_seconds", map[string]string{"stage": "normalize"}, 4},
	}
	for _, c := range checks {
		if got := sample(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v (%s)", c.name, c.labels, got, c.want, c.reason)
		}
	}
	// Sub-millisecond work must be visible: the histograms start at 50 µs.
	for _, name := range []string{"flowdrop_gateway_added_seconds", "flowdrop_backend_latency_seconds"} {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("%s missing", name)
			continue
		}
		if b := f.GetMetric()[0].GetHistogram().GetBucket(); len(b) == 0 || b[0].GetUpperBound() != 50e-6 {
			t.Errorf("%s's first bucket %v; want 50µs", name, b)
		}
	}
	if f := fams["flowdrop_policy_denials_total"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tool" && l.GetValue() != "run_command" && l.GetValue() != "_unknown" {
					t.Errorf("denial labelled with tool %q", l.GetValue())
				}
			}
		}
	}
}

// TestAdminReadyzDuringShutdown: /readyz turns 503 as soon as shutdown
// starts, while a call is still draining; /healthz stays 200.
func TestAdminReadyzDuringShutdown(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	env := gatewaytest.Start(t, gatewaytest.WithAdmin(),
		gatewaytest.WithTool(gatewaytest.ObjectTool("slow")),
		gatewaytest.WithBackendHandler("slow", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &gatewayv1.InvokeResponse{Result: structpb.NewNullValue()}, nil
		}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.Client.InvokeTool(context.Background(), &gatewayv1.InvokeToolRequest{Tool: "slow"})
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("call never reached the backend")
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		env.Gateway.Close(ctx)
	}()
	ready := http.StatusOK
	for range 200 { // bounded: Shutdown flips readiness first thing
		if ready = httpStatus(t, env.AdminURL+"/readyz"); ready == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ready != http.StatusServiceUnavailable {
		t.Errorf("/readyz during shutdown = %d, want 503", ready)
	}
	if got := httpStatus(t, env.AdminURL+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz during shutdown = %d, want 200", got)
	}
	close(release)
	<-done
	<-stopped
}

// tracedBackend is a ToolBackendService with its own otelgrpc server
// handler and span recorder, like an instrumented tool service.
type tracedBackend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
}

func (tracedBackend) Invoke(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	return &gatewayv1.InvokeResponse{Result: structpb.NewBoolValue(true)}, nil
}

// TestTraceReachesTheBackend: the backend's server span is in the gateway's
// trace, and its parent is the gateway's client span.
func TestTraceReachesTheBackend(t *testing.T) {
	t.Parallel()
	backendRec := tracetest.NewSpanRecorder()
	backendTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(backendRec))
	gs := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(backendTP), otelgrpc.WithPropagators(otelprop.TraceContext{}))))
	gatewayv1.RegisterToolBackendServiceServer(gs, tracedBackend{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	backendAddr := lis.Addr().String()

	gwRec := tracetest.NewSpanRecorder()
	gwTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(gwRec))
	p := server.DemoPolicy()
	p.Tracing.Provider = gwTP
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p),
		gatewaytest.WithTool(func(string) registry.Tool { return gatewaytest.ObjectTool("traced")(backendAddr) }))

	if _, err := env.Client.InvokeTool(context.Background(), &gatewayv1.InvokeToolRequest{Tool: "traced"}); err != nil {
		t.Fatal(err)
	}
	find := func(rec *tracetest.SpanRecorder, kind trace.SpanKind, name string) sdktrace.ReadOnlySpan {
		for range 400 { // bounded: server spans end just after the response is sent
			for _, s := range rec.Ended() {
				if s.SpanKind() == kind && s.Name() == name {
					return s
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("no %v span %q", kind, name)
		return nil
	}
	gwServer := find(gwRec, trace.SpanKindServer, "flowdrop.gateway.v1.ToolGatewayService/InvokeTool")
	gwClient := find(gwRec, trace.SpanKindClient, "flowdrop.gateway.v1.ToolBackendService/Invoke")
	beServer := find(backendRec, trace.SpanKindServer, "flowdrop.gateway.v1.ToolBackendService/Invoke")

	if gwClient.SpanContext().TraceID() != gwServer.SpanContext().TraceID() {
		t.Errorf("gateway client span is in trace %s, server span in %s", gwClient.SpanContext().TraceID(), gwServer.SpanContext().TraceID())
	}
	if got, want := beServer.SpanContext().TraceID(), gwServer.SpanContext().TraceID(); got != want {
		t.Errorf("backend span trace id %s, want the gateway's %s", got, want)
	}
	if got, want := beServer.Parent().SpanID(), gwClient.SpanContext().SpanID(); got != want {
		t.Errorf("backend span parent %s, want the gateway's client span %s", got, want)
	}
	if !beServer.Parent().IsRemote() {
		t.Error("backend span's parent is not remote: the context was not propagated over the wire")
	}
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPRequestCounters: MCP requests are counted by method and outcome —
// a listing, a served call, a call the pipeline refused, a method no one
// knows (counted as "other", so the label set stays bounded).
func TestMCPRequestCounters(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)), gatewaytest.WithAdmin(), gatewaytest.WithMCP())
	ctx := testCtx(t)
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"X-Api-Key": {keyInvoker}}})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "x"}}); err != nil {
		t.Fatal(err)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "ls && rm -rf /"}})
	fams := scrape(t, env.AdminURL)
	for _, c := range []struct {
		labels map[string]string
		reason string
	}{
		{map[string]string{"method": "tools/list", "outcome": "ok"}, "the listing"},
		{map[string]string{"method": "tools/call", "outcome": "ok"}, "the served call"},
	} {
		if got := sample(fams, "flowdrop_mcp_requests_total", c.labels); got < 1 {
			t.Errorf("flowdrop_mcp_requests_total%v = %v; want ≥ 1 (%s)", c.labels, got, c.reason)
		}
	}
	refused := max(0, sample(fams, "flowdrop_mcp_requests_total", map[string]string{"method": "tools/call", "outcome": "tool-error"})) +
		max(0, sample(fams, "flowdrop_mcp_requests_total", map[string]string{"method": "tools/call", "outcome": "error"}))
	if refused < 1 {
		t.Errorf("the refused tools/call is not counted as tool-error or error: %v", fams["flowdrop_mcp_requests_total"])
	}
}
