// Package mcpfollow keeps the tools imported from upstream MCP servers in
// step with their upstreams (Follower): a notification session per
// upstream, paced re-lists, listings held to bounds, and every change
// through definition pinning (internal/mcppin) as a conditional registry
// write with its audit line. The composition root (package server) builds
// one with New, starts Run and stops it with Close:
//
//	f := mcpfollow.New(mcpfollow.Config{Registry: reg, Audit: auditor, Stdio: kinds.MCPUpstream})
//	go f.Run()
//	defer f.Close()
package mcpfollow
