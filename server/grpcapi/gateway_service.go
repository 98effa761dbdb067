package grpcapi

import (
	"context"
	"runtime"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/invokewire"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/rawcodec"
)

// The InvokeTool face. Every request is received undecoded (rawcodec): the
// handler reads the envelope (invokewire.ScanToolRequest: tool, call id,
// the arguments' bytes) and gives the pipeline a Call holding the arguments
// as received bytes; the stages decode them only if one needs them, and the
// backend forwards the received bytes when nothing changed them. A request
// whose envelope is not plain (unknown fields, repeats, invalid UTF-8) is
// decoded whole and continues decoded; so is one with arguments_json, whose
// text the pipeline parses. The answer is the backend's bytes with the
// repairs appended (invokewire.ToolResponse).

// gatewayService is the ToolGatewayService handler: by the time it runs the
// stage interceptors have passed the call, so it only dispatches.
type gatewayService struct {
	p *pipeline.Pipeline

	info    *grpc.UnaryServerInfo
	handler grpc.UnaryHandler

	// streamChain is the unary chain InvokeToolStream's call runs through
	// (invoke_stream.go), with streamInfo naming the method.
	streamChain grpc.UnaryServerInterceptor
	streamInfo  *grpc.UnaryServerInfo

	decodedWhole atomic.Int64 // requests decoded whole (envelope not plain)
}

func newGatewayService(p *pipeline.Pipeline, streamChain grpc.UnaryServerInterceptor) *gatewayService {
	g := &gatewayService{p: p, streamChain: streamChain}
	g.info = &grpc.UnaryServerInfo{Server: g, FullMethod: gatewayv1.ToolGatewayService_InvokeTool_FullMethodName}
	g.streamInfo = &grpc.UnaryServerInfo{Server: g, FullMethod: invokeToolStreamMethod}
	g.handler = func(ctx context.Context, req any) (any, error) {
		return g.invokeTool(ctx, req.(*gatewayv1.InvokeToolRequest))
	}
	return g
}

// rawGatewayServiceDesc replaces the generated ToolGatewayService
// descriptor: same service, methods and proto file (reflection and grpcurl
// see no difference), with handlers that receive the request undecoded.
var rawGatewayServiceDesc = grpc.ServiceDesc{
	ServiceName: gatewayv1.ToolGatewayService_ServiceDesc.ServiceName,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "InvokeTool",
		Handler:    rawInvokeToolHandler,
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "InvokeToolStream",
		Handler:       rawInvokeToolStreamHandler,
		ServerStreams: true,
	}},
	Metadata: gatewayv1.ToolGatewayService_ServiceDesc.Metadata,
}

// rawCall is what a raw InvokeTool call needs up front, allocated in one
// piece: the received request, the call and the request the interceptor
// chain sees (without arguments).
type rawCall struct {
	raw  rawcodec.Request
	call pipeline.Call
	req  gatewayv1.InvokeToolRequest
}

func rawInvokeToolHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	g := srv.(*gatewayService)
	rc := new(rawCall)
	if err := dec(&rc.raw); err != nil {
		return nil, err
	}
	// Everything that reads the received bytes runs inside this call: the
	// decoded paths copy what they keep (proto.Unmarshal does not alias).
	defer rc.raw.Release()
	req, err := g.request(ctx, rc)
	if err != nil {
		return nil, err
	}
	ctx = pipeline.WithCall(ctx, &rc.call)
	if interceptor == nil {
		return g.handler(ctx, req)
	}
	return interceptor(ctx, req, g.info, g.handler)
}

// request sets up the call from the received bytes: undecoded when the
// envelope is plain, else from the whole request decoded.
func (g *gatewayService) request(ctx context.Context, rc *rawCall) (*gatewayv1.InvokeToolRequest, error) {
	if env, ok := invokewire.ScanToolRequest(rc.raw.Buf); ok && env.HasArgs {
		rc.call.Init(env.Tool, env.CallID, nil)
		rcv := pipeline.Received{Args: env.Args}
		if env.IsBackendHead() {
			rcv.Message = rc.raw.Buf
			if rc.raw.Held != nil {
				rcv.Hold = rc.raw.Held
			}
		}
		rc.call.Receive(rcv)
		rc.call.SetIdempotencyKey(env.IdempotencyKey)
		rc.call.SetIdempotencyKey(metadata.ValueFromIncomingContext(ctx, IdempotencyKeyHeader)...)
		rc.req.Tool, rc.req.CallId = env.Tool, env.CallID
		return &rc.req, nil
	}
	g.decodedWhole.Add(1)
	req := &rc.req
	// Unknown fields are dropped, in the arguments too: only what the
	// stages checked reaches the backend.
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rc.raw.Buf, req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "request is not a valid InvokeToolRequest: %v", err)
	}
	rc.call.Init(req.GetTool(), req.GetCallId(), req.GetArguments())
	if text := req.GetArgumentsJson(); text != "" {
		// The model's text: the pipeline parses it (strictly, within the
		// limits) when a stage first needs the arguments.
		rc.call.ReceiveJSON(pipeline.ArgumentsJSONField, text, req.Arguments != nil)
	}
	rc.call.SetIdempotencyKey(req.GetIdempotencyKey())
	rc.call.SetIdempotencyKey(metadata.ValueFromIncomingContext(ctx, IdempotencyKeyHeader)...)
	return req, nil
}

// invokeTool is the handler: dispatch, then the response with the repairs.
func (g *gatewayService) invokeTool(ctx context.Context, _ *gatewayv1.InvokeToolRequest) (any, error) {
	c := pipeline.CallFrom(ctx)
	if c == nil {
		// Only possible if the chain stopped installing the outcome interceptor.
		return nil, status.Error(codes.Internal, "gateway misconfigured: InvokeTool reached the handler without the pipeline")
	}
	res, perr := g.p.Dispatch(ctx, c)
	if perr != nil {
		return nil, Status(perr).Err()
	}
	repairs := c.Report.Repairs
	if res.Encoded != nil {
		// The backend's (or the stored) bytes, with the repairs and the
		// replay mark when there are any.
		return &rawcodec.Response{Buf: invokewire.ToolResponse(res.Encoded, repairs, res.Replayed)}, nil
	}
	return &gatewayv1.InvokeToolResponse{Result: res.Value, IsError: res.IsError, Repairs: repairsProto(repairs), Replayed: res.Replayed}, nil
}

// IdempotencyKeyHeader is the gRPC metadata that carries an idempotency
// key (like InvokeToolRequest.idempotency_key).
const IdempotencyKeyHeader = "idempotency-key"

// streamWorkers is the number of long-lived goroutines the server runs
// calls on (grpc.NumStreamWorkers). A call needs ~16 KiB of stack through
// the interceptor chain and the backend call; a fresh goroutine per call
// grows its stack by copying every time (about 7% of the gateway's CPU in
// the benchmark profile), a reused one keeps its grown stack. Calls beyond
// the workers still get their own goroutine, so this bounds nothing.
func streamWorkers() uint32 { return uint32(32 * runtime.GOMAXPROCS(0)) }
