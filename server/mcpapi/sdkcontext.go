package mcpapi

import (
	"context"
	"reflect"
)

// sdkPackage is the go-sdk package whose server keys its per-request state
// in the request's context (by types of its own; TestSDKPackagePath holds
// the path to the SDK's).
const sdkPackage = "github.com/modelcontextprotocol/go-sdk/mcp"

// withoutSDKValues is ctx — its deadline, cancellation and every value the
// gateway and tracing put there — less the values the SDK's server stored
// for the request it is answering (the caller's protocol revision, its
// JSON-RPC id, log level). The call runs on to backends, and an upstream MCP
// server is reached through the SDK's client, which reads the same keys: a
// session made during a 2026-07-28 caller's call would otherwise offer the
// upstream that revision (and be refused by an upstream that does not serve
// it), and one made during an older caller's would be pinned to that
// caller's revision. What the gateway says to an upstream is its own.
func withoutSDKValues(ctx context.Context) context.Context { return sdkValuesHidden{ctx} }

type sdkValuesHidden struct{ context.Context }

func (c sdkValuesHidden) Value(key any) any {
	if t := reflect.TypeOf(key); t != nil && t.PkgPath() == sdkPackage {
		return nil
	}
	return c.Context.Value(key)
}
