package server

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// tracing holds the gateway's TracerProvider and the otelgrpc stats
// handlers for the server and for backend connections. Nothing here touches
// the otel globals: the provider and the propagator are passed explicitly.
type tracing struct {
	tp       trace.TracerProvider
	shutdown func(context.Context) error
	// on: spans are recorded, so the stats handlers are installed (run.go).
	// Off (exporter "none"), they would only carry the caller's trace
	// context, at a cost on every call; forward.go copies those headers instead.
	on bool
}

// propagator is W3C trace context (traceparent/tracestate), set explicitly
// on both handlers.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// newTracing builds the provider for cfg. With exporter "none" tracing is
// off: the otel no-op provider, no stats handlers, and an incoming trace
// context is copied through to the backends (forward.go). tp, when not
// nil, overrides cfg and turns tracing on (tests use an sdktrace provider
// with a span recorder).
func newTracing(ctx context.Context, cfg TracingConfig, tp trace.TracerProvider) (*tracing, error) {
	if tp != nil {
		return &tracing{tp: tp, shutdown: func(context.Context) error { return nil }, on: true}, nil
	}
	switch cfg.Exporter {
	case "", TracingNone:
		return &tracing{tp: tracenoop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}, nil
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
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		return &tracing{tp: sdk, shutdown: sdk.Shutdown, on: true}, nil
	}
	return nil, fmt.Errorf("tracing: exporter %q: must be %q or %q", cfg.Exporter, TracingNone, TracingOTLP)
}

func (t *tracing) opts() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(propagator),
		// No otel metrics: Prometheus (metrics.go) is the metrics path.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

func (t *tracing) serverHandler() stats.Handler { return otelgrpc.NewServerHandler(t.opts()...) }
func (t *tracing) clientHandler() stats.Handler { return otelgrpc.NewClientHandler(t.opts()...) }
