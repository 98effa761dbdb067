package loadgen

import (
	"context"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/bareproxy"
)

// Targets the driver can call.
const (
	TargetGateway = "gateway" // ToolGatewayService/InvokeTool on the gateway
	TargetDirect  = "direct"  // ToolBackendService/Invoke on the backend itself
	TargetProxy   = "proxy"   // InvokeTool on a bareproxy (bare or decode mode)
)

// MethodFor is the full gRPC method the driver calls for a target.
func MethodFor(target string) (string, error) {
	switch target {
	case TargetGateway, TargetProxy:
		return gatewayv1.ToolGatewayService_InvokeTool_FullMethodName, nil
	case TargetDirect:
		return gatewayv1.ToolBackendService_Invoke_FullMethodName, nil
	}
	return "", fmt.Errorf("unknown target %q (want %q, %q or %q)", target, TargetGateway, TargetDirect, TargetProxy)
}

// NewCall returns a Call that sends payload to method on cc as raw bytes and
// discards the response bytes: the driver shares the CPU with what it
// measures, so it neither marshals nor decodes per call.
func NewCall(cc grpc.ClientConnInterface, method string, payload []byte) Call {
	req := bareproxy.NewFrame(payload)
	opt := grpc.ForceCodecV2(bareproxy.Codec{})
	return func(ctx context.Context) error {
		var resp bareproxy.Frame
		err := cc.Invoke(ctx, method, req, &resp, opt)
		resp.Free()
		return err
	}
}

// NewCallSpread is NewCall over several client connections, each call on
// the next one round-robin: a proxy that serves one connection on one
// worker or thread (nginx's HTTP/2) is measured as many agents load it.
func NewCallSpread(ccs []grpc.ClientConnInterface, method string, payload []byte) Call {
	if len(ccs) == 1 {
		return NewCall(ccs[0], method, payload)
	}
	calls := make([]Call, len(ccs))
	for i, cc := range ccs {
		calls[i] = NewCall(cc, method, payload)
	}
	var next atomic.Uint64
	n := uint64(len(calls))
	return func(ctx context.Context) error {
		return calls[(next.Add(1)-1)%n](ctx)
	}
}

// Backend is a minimal fast ToolBackendService: it answers every call with
// the same small result, without sleeping or logging, so a benchmark
// measures the hops in front of it.
type Backend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
	resp *gatewayv1.InvokeResponse
}

// NewBackend returns a Backend.
func NewBackend() *Backend {
	result, _ := structpb.NewValue(BackendResult())
	// One shared response: protobuf messages are safe to marshal concurrently.
	return &Backend{resp: &gatewayv1.InvokeResponse{Result: result}}
}

// Invoke implements gatewayv1.ToolBackendServiceServer.
func (b *Backend) Invoke(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	return b.resp, nil
}
