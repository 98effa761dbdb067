package server_test

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// otlpReceiver is a real OTLP/gRPC trace receiver on loopback (the
// collector's own protocol, from the otel proto packages) keeping what it
// is sent.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.ResourceSpans
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	r.spans = append(r.spans, req.GetResourceSpans()...)
	r.mu.Unlock()
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type receivedSpan struct {
	res  map[string]string
	span *tracepb.Span
}

func (r *otlpReceiver) all() []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, rs := range r.spans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, receivedSpan{res, s})
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// TestTracesReachAnOTLPReceiver: with tracing.exporter otlp, the gateway
// exports to a real OTLP receiver spans named as the service
// (service.name flowdrop-gateway, its version); an MCP tools/call with the
// caller's traceparent is a server span in the caller's trace, carrying
// the tool, caller, repairs and decision, and the backend call's client
// span is its child; the gRPC face's server span carries the same facts.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	t.Parallel()
	rec := &otlpReceiver{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rec)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)

	p := testPolicy(nil)
	p.Tracing = server.TracingConfig{Exporter: server.TracingOTLP, Endpoint: lis.Addr().String(), Insecure: true}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithMCP())
	ctx := testCtx(t)

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{
		"X-Api-Key": {keyInvoker}, "Traceparent": {"00-" + traceID + "-" + parentID + "-01"}}})
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "A &amp; B"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "grpc"})}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	env.Gateway.Close(cctx) // flushes the exporter

	spans := rec.all()
	if len(spans) == 0 {
		t.Fatal("the receiver got no spans")
	}
	var mcpSpan, grpcSpan *tracepb.Span
	for _, s := range spans {
		if s.res["service.name"] != "flowdrop-gateway" || s.res["service.version"] == "" {
			t.Errorf("span %q has resource %v; want service.name flowdrop-gateway and a version", s.span.GetName(), s.res)
		}
		switch s.span.GetName() {
		case "MCP tools/call":
			mcpSpan = s.span
		case "flowdrop.gateway.v1.ToolGatewayService/InvokeTool":
			grpcSpan = s.span
		}
	}
	if mcpSpan == nil || grpcSpan == nil {
		names := []string{}
		for _, s := range spans {
			names = append(names, s.span.GetName())
		}
		t.Fatalf("spans %v; want an MCP tools/call span and the InvokeTool server span", names)
	}
	if got := hex.EncodeToString(mcpSpan.GetTraceId()); got != traceID {
		t.Errorf("MCP span trace %s; want the caller's %s (traceparent honoured)", got, traceID)
	}
	if got := hex.EncodeToString(mcpSpan.GetParentSpanId()); got != parentID {
		t.Errorf("MCP span parent %s; want the caller's span %s", got, parentID)
	}
	for name, sp := range map[string]*tracepb.Span{"MCP": mcpSpan, "gRPC": grpcSpan} {
		a := attrs(sp.GetAttributes())
		if a["flowdrop.tool"] != "create_note" || a["flowdrop.caller"] == "" || a["flowdrop.decision"] != "allow" || a["flowdrop.repairs"] == "" {
			t.Errorf("%s span attributes %v; want flowdrop.tool, .caller, .decision, .repairs", name, a)
		}
	}
	child := false
	for _, s := range spans {
		if s.span.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && string(s.span.GetParentSpanId()) == string(mcpSpan.GetSpanId()) {
			child = true
		}
	}
	if !child {
		t.Error("no backend client span is a child of the MCP span")
	}
}

// refusingReceiver is an OTLP receiver that refuses every export with a
// code the exporter does not retry, counting the attempts.
type refusingReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	attempts atomic.Int64
}

func (r *refusingReceiver) Export(context.Context, *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.attempts.Add(1)
	return nil, status.Error(codes.PermissionDenied, "collector refuses")
}

// TestTraceExportFailuresAreCountedAndLogged: spans an OTLP collector
// refuses are counted in flowdrop_trace_spans_lost_total and the failure
// is logged — once, however many exports fail within a minute — where
// before they went to otel's global handler, uncounted.
func TestTraceExportFailuresAreCountedAndLogged(t *testing.T) {
	t.Parallel()
	rec := &refusingReceiver{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rec)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)

	p := testPolicy(nil)
	p.Tracing = server.TracingConfig{Exporter: server.TracingOTLP, Endpoint: lis.Addr().String(), Insecure: true}
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithLogOutput(&logs))
	call := func() {
		if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}); err != nil {
			t.Fatal(err)
		}
	}
	call()
	// The batcher exports on its own schedule (every 5 s).
	deadline := time.Now().Add(30 * time.Second)
	for sample(scrape(t, env.AdminURL), "flowdrop_trace_spans_lost_total", nil) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("flowdrop_trace_spans_lost_total still 0 after %d refused exports", rec.attempts.Load())
		}
		time.Sleep(200 * time.Millisecond)
	}
	call()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env.Gateway.Close(cctx) // flushes the second span: a second refused export
	if n := rec.attempts.Load(); n < 2 {
		t.Fatalf("%d export attempts, want at least 2", n)
	}
	if n := strings.Count(logs.String(), "trace export to the OTLP collector failed"); n != 1 {
		t.Errorf("%d log lines for %d failed exports, want 1 (rate-limited):\n%s", n, rec.attempts.Load(), logs.String())
	}
}
