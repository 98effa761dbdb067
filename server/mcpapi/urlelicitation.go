package mcpapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/server/pipeline"
)

// URL-mode elicitation (MCP 2025-11-25, SEP-1036) of a call whose upstream
// takes the caller's own authorization (identity mode user-consent) and
// the gateway holds none: the caller is sent the gateway's authorization
// link. The face is stateless, so it cannot send elicitation/create in the
// middle of a call; it answers with the revision's URLElicitationRequired
// error (-32042), whose data carries the URL-mode elicitation, and the
// client retries the call once the person has authorized.
//
// Who gets -32042: a caller on 2025-11-25 (its capabilities are not known
// to a stateless server: every request is answered on its own, after an
// initialize the server did not keep), and a caller on 2026-07-28 or later
// that declared elicitation.url in the request's clientCapabilities.
// Anyone else — a revision without the error, or a caller that declared it
// cannot open URLs — gets an isError result whose text names the URL.

// RevisionURLElicitation is the first revision with URL-mode elicitation
// and its -32042 error.
const RevisionURLElicitation = "2025-11-25"

// MCPMetaAuthorizationURL (in an isError result of identity-consent-required):
// the URL that authorizes the gateway at the tool's upstream.
const MCPMetaAuthorizationURL = "flowdrop/authorization_url"

type urlElicitationKey struct{}

// withURLElicitation says whether this request's caller may be sent a
// URL elicitation (callError reads it).
func withURLElicitation(ctx context.Context, rev string, meta mcp.Meta) context.Context {
	ok := rev >= RevisionURLElicitation && (rev < RevisionResultType || clientOpensURLs(meta))
	return context.WithValue(ctx, urlElicitationKey{}, ok)
}

func urlElicitationFrom(ctx context.Context) bool {
	ok, _ := ctx.Value(urlElicitationKey{}).(bool)
	return ok
}

// clientOpensURLs reports whether the request's clientCapabilities
// (2026-07-28's per-request _meta) declare elicitation: {url: {}}.
func clientOpensURLs(meta mcp.Meta) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	el, _ := caps["elicitation"].(map[string]any)
	v, ok := el["url"]
	return ok && v != nil
}

// urlElicitationRequired is -32042 with e's authorization URL as the one
// URL-mode elicitation (a fresh id: the gateway sends no completion
// notification on a stateless face, so the id only names this one).
func urlElicitationRequired(e *pipeline.Error) error {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	data, err := json.Marshal(map[string]any{"elicitations": []*mcp.ElicitParams{{Mode: "url", URL: e.AuthorizationURL,
		ElicitationID: base64.RawURLEncoding.EncodeToString(id), Message: e.Message}}})
	if err != nil {
		return &jsonrpc.Error{Code: mcp.CodeURLElicitationRequired, Message: e.Message}
	}
	// The message names the URL too, for a client that shows only it.
	return &jsonrpc.Error{Code: mcp.CodeURLElicitationRequired, Message: e.Message, Data: data}
}
