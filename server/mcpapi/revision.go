package mcpapi

import (
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP protocol revisions the face treats differently. Revisions are dates
// (YYYY-MM-DD), so they order as strings.
const (
	// RevisionResultType is the first revision (SEP-2322, SEP-2575) whose
	// results must say whether they are complete: `resultType`.
	RevisionResultType = "2026-07-28"
)

// requestRevision is the MCP revision a request is answered under: the one
// it names in its own _meta (from 2026-07-28 every request says it, and
// there is no initialize), else the one its session negotiated (initialize,
// or a stateless request's MCP-Protocol-Version header, which the SDK keeps
// as the session's initialize parameters). "" when neither says.
func requestRevision(req mcp.Request) string {
	// A method whose params are optional arrives with a typed nil, whose
	// GetMeta would dereference it.
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		if v, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
			return v
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

// resultTypeFor is the resultType a complete result carries under rev:
// "complete" from RevisionResultType on, nothing before it (older clients
// do not know the field).
func resultTypeFor(rev string) string {
	if rev >= RevisionResultType {
		return "complete"
	}
	return ""
}

// completeUnder is r, a fresh result, marked complete under rev. The
// go-sdk v1.8.0 keeps the resultType of resources/read and prompts/get
// results unexported and never sets it on a server's, though 2026-07-28
// requires it of every result; its JSON form is the only way in, so r
// must be filled after this call.
func completeUnder[R json.Unmarshaler](rev string, r R) R {
	if rt := resultTypeFor(rev); rt != "" {
		_ = r.UnmarshalJSON([]byte(`{"resultType":"` + rt + `"}`))
	}
	return r
}
