package mcpupstream

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectOptions tune a session to an upstream.
type ConnectOptions struct {
	// Base is the HTTP transport under the credential header (nil: the
	// default transport).
	Base http.RoundTripper
	// Client are the go-sdk client's options (nil: none), e.g. a
	// ToolListChangedHandler.
	Client *mcp.ClientOptions
	// Listen keeps a standing GET stream open for the upstream's
	// notifications; without it the session only carries calls.
	Listen bool
}

// Connect opens an MCP session over streamable HTTP to url, presenting h.
// The transport does not retry on its own: a failure is the caller's to
// see (and to reconnect after, within its own bounds).
func Connect(ctx context.Context, url string, h Header, o ConnectOptions) (*mcp.ClientSession, error) {
	transport := &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           HTTPClient(h, o.Base),
		DisableStandaloneSSE: !o.Listen,
		MaxRetries:           -1,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-gateway", Version: "1"}, o.Client)
	return client.Connect(ctx, transport, nil)
}
