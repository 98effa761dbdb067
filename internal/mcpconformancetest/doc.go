// Package mcpconformancetest runs the MCP conformance suite
// (@modelcontextprotocol/conformance, the newest stable and the newest
// pre-release, pinned in tools/mcpconformance) against a real gateway's MCP
// face fronting internal/mcpconformancefixture, and holds the result to the
// expected failures CONFORMANCE.md lists: any other failure fails the test,
// and so does a listed failure that no longer happens.
package mcpconformancetest
