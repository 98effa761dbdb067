package mcpapi

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientName is the calling program's name as the face learns it, for
// repair analytics (pipeline.Call.SetClient): the request's own
// clientInfo.name in _meta (protocol revision 2026-07-28 sends it with
// every request), else the session's initialize clientInfo (this face
// serves statelessly, so an older client's initialize is a request of its
// own and its clientInfo is not kept), else the HTTP User-Agent's
// product ("node" in "node/22", the whole of "claude-code"). Allocation
// free: each is a string the request already holds. Caller-chosen text:
// the analytics bound it.
func clientName(req *mcp.CallToolRequest) string {
	if p := req.Params; p != nil {
		if ci, ok := p.Meta[mcp.MetaKeyClientInfo].(map[string]any); ok {
			if name, ok := ci["name"].(string); ok && name != "" {
				return name
			}
		}
	}
	if ss := req.Session; ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			return ip.ClientInfo.Name
		}
	}
	if req.Extra != nil {
		return product(req.Extra.Header.Get("User-Agent"))
	}
	return ""
}

// product is a User-Agent's first product name, without its version:
// "grpc-go/1.79.0" → "grpc-go", "flowdropctl/dev grpc-go/1.79.0" →
// "flowdropctl".
func product(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		return ua[:i]
	}
	return ua
}
