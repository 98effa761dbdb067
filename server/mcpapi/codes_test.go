package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// gatewayCodes are the JSON-RPC error codes of the gateway's own, each
// with what it says.
var gatewayCodes = map[int64]string{
	MCPCodeUpstreamTooLarge:           "an upstream's answer over the backend receive limit",
	MCPCodeUpstreamUnavailable:        "an upstream that could not answer",
	MCPCodeSubscriptionLimit:          "a subscription over the caller's limit",
	MCPCodeInputTimeout:               "a request for input its caller did not answer in time",
	mcpupstream.CodeInputUnattributed: "an upstream's request for input no one request can own (sent upstream)",
	MCPCodeInputForbidden:             "a kind of input the policy forbids an upstream to ask",
	MCPCodePermissionDenied:           "a caller with no right to call tools",
	MCPCodeBundleNotFound:             "an endpoint whose bundle does not exist",
}

// TestGatewayCodesReachGoSDKPeers: each of the gateway's error codes
// reaches a go-sdk peer as the JSON-RPC error it is. The go-sdk reserves
// codes of its own in the implementation-defined range and reads them
// as its state, not the peer's answer: -32003 and -32004 as "the
// connection is closing" (the call's error is ErrConnectionClosed, the
// message and code lost), -32005 as a transport's rejection. A code here
// that collides with one fails; so does a code declared in the package
// and missing here.
func TestGatewayCodesReachGoSDKPeers(t *testing.T) {
	declared := regexp.MustCompile(`(?m)^\s*(?:const\s+)?(MCPCode\w+)\s*=\s*(-\d+)`)
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range declared.FindAllSubmatch(src, -1) {
			code, _ := strconv.ParseInt(string(m[2]), 10, 64)
			if _, ok := gatewayCodes[code]; !ok {
				t.Errorf("%s (%d, %s) is not in gatewayCodes: add it, so it is checked against the go-sdk's", m[1], code, f)
			}
		}
	}

	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "codes", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "fail", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"code": map[string]any{"type": "integer"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Code int64 }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return nil, &jsonrpc.Error{Code: args.Code, Message: gatewayCodes[args.Code]}
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for code, what := range gatewayCodes {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"code": code}})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != code || rpc.Message != what || errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("code %d (%s) reached the go-sdk client as %v; want the JSON-RPC error as sent", code, what, err)
		}
	}
}
