// Package grpcapi is the gateway's gRPC face: ToolGatewayService (InvokeTool
// received undecoded, through rawcodec), ToolRegistryService, health and
// reflection, the interceptor chain (chain.go: recovery, logging, metrics,
// authentication, then one generic adapter per pipeline stage, in the
// pipeline's order) and the one place errors become gRPC statuses
// (status.go).
//
// It imports the pipeline, observe and the registry; never the MCP face.
package grpcapi
