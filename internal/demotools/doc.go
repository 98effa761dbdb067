// Package demotools is the example tool service: a ToolBackendService whose
// tools exercise RT-TOOL-8 (a string title, an array parameter, an object
// parameter). Each tool echoes what reached it, so a demo user sees the
// normalized arguments and tests can assert exactly what the backend got.
//
// It is used by `go run ./cmd/flowdrop-gateway` (in-process), by
// cmd/example-tools (standalone) and by internal/gatewaytest.
//
// It imports gRPC, the generated contract and go-grpc-middleware; nothing of the gateway.
package demotools
