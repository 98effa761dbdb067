// Package rawcodec is the gRPC codec that lets InvokeTool bytes pass
// through the gateway undecoded: a request received as it came, a backend
// request built from the received bytes plus the caller, and responses
// kept as bytes. Every other message goes through the standard proto
// codec. Its name is "proto", so the content type on the wire is
// unchanged for peers.
//
// It imports gRPC and protobuf only; the gRPC face (server) and the
// ToolBackendService backend (client) install it.
package rawcodec
