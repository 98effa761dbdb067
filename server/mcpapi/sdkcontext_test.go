package mcpapi

import (
	"context"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKPackagePath: sdkPackage is where the SDK's own types live, so a
// move of the SDK's package fails here rather than letting its request
// state leak to upstreams again.
func TestSDKPackagePath(t *testing.T) {
	if got := reflect.TypeFor[mcp.Implementation]().PkgPath(); got != sdkPackage {
		t.Fatalf("the SDK's package is %q, sdkPackage says %q", got, sdkPackage)
	}
}

type gatewayKey struct{}

func TestWithoutSDKValuesHidesOnlyTheSDKs(t *testing.T) {
	type sdkLike = mcp.Role // a key of a type of the SDK's package
	ctx := context.WithValue(context.Background(), gatewayKey{}, "kept")
	ctx = context.WithValue(ctx, sdkLike("k"), "hidden")
	ctx, cancel := context.WithCancel(ctx)
	hidden := withoutSDKValues(ctx)
	if v := hidden.Value(gatewayKey{}); v != "kept" {
		t.Errorf("the gateway's value = %v, want kept", v)
	}
	if v := hidden.Value(sdkLike("k")); v != nil {
		t.Errorf("the SDK's value = %v, want hidden", v)
	}
	cancel()
	if hidden.Err() == nil {
		t.Error("cancellation does not reach the wrapped context")
	}
}
