// Package observe is what the gateway shows about itself: Prometheus
// metrics (a pipeline Recorder, in a registry of its own), tracing
// (otelgrpc stats handlers, no otel globals) and the admin HTTP listener
// (/metrics, /healthz, /readyz).
//
// It imports the pipeline, gRPC middleware providers, Prometheus and otel.
package observe
