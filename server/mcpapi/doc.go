// Package mcpapi is the gateway's MCP face: the same registry and the same
// pipeline served as a Model Context Protocol tool server over streamable
// HTTP (github.com/modelcontextprotocol/go-sdk), with HTTP authentication
// in front, the tool set kept in step with the registry, and the one place
// a pipeline error becomes an MCP outcome (result.go).
//
// It imports the pipeline and the registry; never the gRPC face.
package mcpapi
