package mcpapi

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capabilities is what the face declares, in initialize and in
// server/discover: tools, with list_changed; per caller, federation.go adds
// what the upstreams in its view offer. Declaring more than is served
// misleads a client; serving more than is declared too (a client may not
// look, a conformance check does): servedMethods must agree with it.
func capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
}

// servedMethods are the requests the face answers. The SDK's server knows
// more (prompts, resources, completion, logging) and would answer them with
// empty lists even though they are not declared; every request not listed
// here (nor answered by federation.go, which serves its methods only to a
// caller they are declared to) is "method not found", as for a server that
// never heard of it.
// Notifications are not requests and are not listed.
var servedMethods = map[string]bool{
	"initialize":           true, // before 2026-07-28
	"ping":                 true,
	"server/discover":      true, // 2026-07-28 (SEP-2575)
	"subscriptions/listen": true, // 2026-07-28: list_changed
	"tools/list":           true,
	"tools/call":           true,
}

// notOffered answers a request for a method the face does not serve.
func notOffered(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not offered by this server", method)}
}
