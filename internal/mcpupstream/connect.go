package mcpupstream

import (
	"context"
	"io"
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
	// ClientNotificationsOnly says Client sets notification handlers only,
	// which no call's answer depends on: a Caller's calls keep its own
	// path (else they go through the SDK).
	ClientNotificationsOnly bool
	// Input are the kinds of input the session declares it can answer
	// (input.go): its calls relay them through their context's InputFunc —
	// over streamable HTTP read from the call's own stream, over stdio and
	// legacy SSE attributed to the one request in flight (attribution.go).
	Input InputKinds
	// Transport is the HTTP transport (TransportDetect when unset).
	Transport Transport
	// Listen keeps a standing GET stream open for the upstream's
	// notifications; without it the session only carries calls (over
	// legacy SSE the one stream carries both, always).
	Listen bool
	// MaxResponseBytes is the largest response budget the session's calls
	// are given (WithResponseLimit); 0: none. Above the SDK's own bound on
	// one event, that bound is raised past it, so a call's budget, not the
	// SDK's scanner, ends an oversized response (the scanner's error
	// leaves the call waiting for its deadline).
	MaxResponseBytes int64
	// Stderr receives a stdio server's stderr (ConnectCommand; nil:
	// discarded), e.g. StderrLog.
	Stderr io.Writer
	// OnToolExecution, when set, is told each tools/list page a stdio or
	// legacy HTTP+SSE session reads: its tools' execution.taskSupport by
	// upstream name (execution.go). Over streamable HTTP it is not told
	// (wrapping that connection would hide what the SDK tells it):
	// Caller.ToolTaskSupport reads the listing there.
	OnToolExecution func(page map[string]string)
}

// Connect opens an MCP session over HTTP to url (o.Transport), presenting
// h. The transport does not retry on its own: a failure is the caller's to
// see (and to reconnect after, within its own bounds).
func Connect(ctx context.Context, url string, h Header, o ConnectOptions) (*mcp.ClientSession, error) {
	c, err := connectHTTP(ctx, url, h, o)
	if err != nil {
		return nil, err
	}
	return c.Session, nil
}

// ConnectCommand starts c and opens an MCP session over its stdio; closing
// the session ends the process (stdin closed, then SIGTERM, then SIGKILL).
// Base, Listen and MaxResponseBytes do not apply: notifications share the
// one stream, and the SDK bounds each message it reads (16 MiB).
func ConnectCommand(ctx context.Context, c Command, o ConnectOptions) (*mcp.ClientSession, error) {
	caller, err := ConnectCommandCaller(ctx, c, o)
	if err != nil {
		return nil, err
	}
	return caller.Session, nil
}

// ConnectCommandCaller is ConnectCommand's session as a Caller: its calls
// go through the SDK, while the gateway's task requests and a call's
// progress go beside it (side.go).
func ConnectCommandCaller(ctx context.Context, c Command, o ConnectOptions) (*Caller, error) {
	var t mcp.Transport = c.transport(o.Stderr)
	if o.OnToolExecution != nil {
		t = executionTransport{t: t, tell: o.OnToolExecution}
	}
	side := &sideTransport{t: oneStream(t, &o)}
	cs, err := connect(ctx, side, o)
	if err != nil {
		return nil, err
	}
	return &Caller{Session: cs, sdk: true, side: side.made}, nil
}

func connect(ctx context.Context, t mcp.Transport, o ConnectOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(clientInfo, o.Client)
	return client.Connect(ctx, t, nil)
}

// streamableWith is the go-sdk's transport to url over client (HTTPClient).
func streamableWith(url string, client *http.Client, o ConnectOptions) *mcp.StreamableClientTransport {
	transport := &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           client,
		DisableStandaloneSSE: !o.Listen,
		MaxRetries:           -1,
	}
	if o.MaxResponseBytes >= mcp.DefaultMaxEventSize {
		transport.MaxEventSize = int(o.MaxResponseBytes) + 1
	}
	return transport
}

// oneStream is t for a session whose one stream carries every call's
// messages (stdio, legacy SSE): when o declares input, read through
// attributedConn, and o's client given the handlers that declare it.
func oneStream(t mcp.Transport, o *ConnectOptions) mcp.Transport {
	if o.Input == (InputKinds{}) {
		return t
	}
	o.Client = withInputHandlers(o.Client, o.Input)
	return attributedTransport{t: t}
}
