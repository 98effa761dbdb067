package observe

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/flowdrop/gateway/internal/buildinfo"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// Tracing holds the gateway's TracerProvider and the otelgrpc stats
// handlers for the server and for backend connections. Nothing here touches
// the otel globals: the provider and the propagator are passed explicitly.
type Tracing struct {
	tp       trace.TracerProvider
	shutdown func(context.Context) error
	// On: spans are recorded, so the stats handlers are installed. Off
	// (exporter "none"), they would only carry the caller's trace context,
	// at a cost on every call; the backend copies those headers instead.
	On bool
}

// Tracing exporters.
const (
	TracingNone = "none"
	TracingOTLP = "otlp"
)

// TracingConfig selects the trace exporter.
type TracingConfig struct {
	// Exporter is TracingNone (default: trace context is still propagated to
	// backends, nothing is exported) or TracingOTLP (OTLP/gRPC to Endpoint).
	Exporter string
	// Endpoint is the OTLP collector's host:port.
	Endpoint string
	// Insecure sends OTLP without TLS (a collector on the same host).
	Insecure bool
	// Provider, when set, is used instead of an exporter (tests record spans
	// with an sdktrace provider). Not settable from the policy file.
	Provider trace.TracerProvider
}

// propagator is W3C trace context (traceparent/tracestate), set explicitly
// on both handlers.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ExportFailed is told of each failed OTLP export: the exporter's error
// (it may name the collector: logs only) and how many spans were lost.
type ExportFailed func(err error, spans int)

// NewTracing builds the provider for cfg. With exporter "none" tracing is
// off: the otel no-op provider, no stats handlers, and an incoming trace
// context is copied through to the backends. cfg.Provider, when set,
// overrides the exporter and turns tracing on. failed, when not nil, is
// told of every export that fails (after the exporter's own retries).
func NewTracing(ctx context.Context, cfg TracingConfig, failed ExportFailed) (*Tracing, error) {
	if tp := cfg.Provider; tp != nil {
		return &Tracing{tp: tp, shutdown: func(context.Context) error { return nil }, On: true}, nil
	}
	switch cfg.Exporter {
	case "", TracingNone:
		return &Tracing{tp: tracenoop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}, nil
	case TracingOTLP:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(cfg.Endpoint)}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		// The exporter connects lazily; a collector that is down loses spans, not calls.
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.Endpoint, err)
		}
		var se sdktrace.SpanExporter = exp
		if failed != nil {
			se = reportingExporter{exp, failed}
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(se), sdktrace.WithResource(Resource()))
		return &Tracing{tp: sdk, shutdown: sdk.Shutdown, On: true}, nil
	}
	return nil, fmt.Errorf("tracing: exporter %q: must be %q or %q", cfg.Exporter, TracingNone, TracingOTLP)
}

// reportingExporter tells failed of each export that fails: the batch
// processor otherwise hands the error only to otel's global handler,
// which writes to the standard logger, uncounted.
type reportingExporter struct {
	sdktrace.SpanExporter
	failed ExportFailed
}

func (e reportingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.failed(err, len(spans))
	}
	return err
}

func (t *Tracing) opts() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(propagator),
		// No otel metrics: Prometheus (Metrics) is the metrics path.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

// ServerHandler is the gRPC server's stats handler (server spans).
func (t *Tracing) ServerHandler() stats.Handler { return otelgrpc.NewServerHandler(t.opts()...) }

// ClientHandler is the backend connections' stats handler (client spans).
func (t *Tracing) ClientHandler() stats.Handler { return otelgrpc.NewClientHandler(t.opts()...) }

// Resource names the gateway in its spans: service.name flowdrop-gateway
// and the build's version (without it an OTLP backend shows
// unknown_service:<binary>).
func Resource() *resource.Resource {
	bi := buildinfo.Read()
	return resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("flowdrop-gateway"), semconv.ServiceVersion(bi.Version),
		attribute.String("vcs.revision", bi.ShortRevision()))
}

// Tracer is the gateway's tracer (spans of the MCP face).
func (t *Tracing) Tracer() trace.Tracer { return t.tp.Tracer("github.com/flowdrop/gateway") }

// Propagator is the W3C trace context propagator both faces read.
func (t *Tracing) Propagator() propagation.TextMapPropagator { return propagator }

// RecordCall puts the call's facts on the span its context carries (the
// gRPC server span, or the MCP face's): the tool, the caller, the repairs
// made and the decision. A no-op when the span is not recording.
func (t *Tracing) RecordCall(ctx context.Context, c *pipeline.Call, o pipeline.Outcome) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("flowdrop.tool", o.Label),
		attribute.String("flowdrop.caller", policy.Bound(c.Caller.Subject)),
		attribute.Int("flowdrop.repairs", len(c.Report.Repairs)),
		attribute.String("flowdrop.decision", o.Decision),
	)
	if o.Reason != "" {
		span.SetAttributes(attribute.String("flowdrop.reason", o.Reason))
	}
}

// RecordBackend is a no-op: the backend call has its own client span.
func (t *Tracing) RecordBackend(string, string, time.Duration) {}

var _ pipeline.Recorder = (*Tracing)(nil)

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.shutdown(ctx) }
