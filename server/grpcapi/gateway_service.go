package grpcapi

import (
	"context"
	"runtime"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/rawcodec"
)

// The InvokeTool face. Every request is received undecoded (rawcodec): the
// handler reads the envelope (tool, call_id, the arguments' bytes) and
// gives the pipeline a Call holding the arguments as received bytes; the
// stages decode them only if one needs them, and the backend forwards the
// received bytes when nothing changed them. A request whose envelope is not
// plain (unknown fields — a field 4 must never reach a backend from a
// caller —, repeats, invalid UTF-8) is decoded whole and continues decoded;
// so is one with arguments_json (field 5), whose text the pipeline parses.
//
// InvokeResponse {result=1, is_error=2} is InvokeToolResponse without
// repairs (field 3), so with no repairs the backend's bytes are the
// response.

// gatewayService is the ToolGatewayService handler: by the time it runs the
// stage interceptors have passed the call, so it only dispatches.
type gatewayService struct {
	p *pipeline.Pipeline

	info    *grpc.UnaryServerInfo
	handler grpc.UnaryHandler

	decodedWhole atomic.Int64 // requests decoded whole (envelope not plain)
}

func newGatewayService(p *pipeline.Pipeline) *gatewayService {
	g := &gatewayService{p: p}
	g.info = &grpc.UnaryServerInfo{Server: g, FullMethod: gatewayv1.ToolGatewayService_InvokeTool_FullMethodName}
	g.handler = func(ctx context.Context, req any) (any, error) {
		return g.invokeTool(ctx, req.(*gatewayv1.InvokeToolRequest))
	}
	return g
}

// rawGatewayServiceDesc replaces the generated ToolGatewayService
// descriptor: same service, method and proto file (reflection and grpcurl
// see no difference), with a handler that receives the request undecoded.
var rawGatewayServiceDesc = grpc.ServiceDesc{
	ServiceName: gatewayv1.ToolGatewayService_ServiceDesc.ServiceName,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "InvokeTool",
		Handler:    rawInvokeToolHandler,
	}},
	Streams:  []grpc.StreamDesc{},
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
	if env, ok := scanEnvelope(rc.raw.Buf); ok && env.hasArgs {
		rc.call.Init(env.tool, env.callID, nil)
		rcv := pipeline.Received{Args: env.args}
		// With an idempotency key (field 4) the message is not a backend
		// request's head: InvokeRequest's field 4 is the caller.
		if !env.hasKey {
			rcv.Message = rc.raw.Buf
			if rc.raw.Held != nil {
				rcv.Hold = rc.raw.Held
			}
		}
		rc.call.Receive(rcv)
		rc.call.SetIdempotencyKey(env.idemKey)
		rc.call.SetIdempotencyKey(metadata.ValueFromIncomingContext(ctx, IdempotencyKeyHeader)...)
		rc.req.Tool, rc.req.CallId = env.tool, env.callID
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
		// InvokeToolResponse is InvokeResponse plus repairs (field 3) and
		// replayed (field 4): the backend's (or the stored) bytes, followed
		// by the repairs and the mark when there are any.
		if len(repairs) == 0 && !res.Replayed {
			return &rawcodec.Response{Buf: res.Encoded}, nil
		}
		b := appendRepairs(res.Encoded[:len(res.Encoded):len(res.Encoded)], repairs)
		if res.Replayed {
			b = protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.VarintType), 1)
		}
		return &rawcodec.Response{Buf: b}, nil
	}
	return &gatewayv1.InvokeToolResponse{Result: res.Value, IsError: res.IsError, Repairs: repairsProto(repairs), Replayed: res.Replayed}, nil
}

// appendRepairs appends InvokeToolResponse.repairs (field 3) as
// proto.Marshal encodes them; TestAppendRepairs holds it to proto.Marshal.
// The slice is full (len == cap), so appending copies it.
func appendRepairs(b []byte, rs []normalize.Repair) []byte {
	for _, r := range rs {
		p := repairProto(r)
		size := 0
		if p.Path != "" {
			size += 1 + protowire.SizeBytes(len(p.Path))
		}
		if p.Kind != 0 {
			size += 1 + protowire.SizeVarint(uint64(p.Kind))
		}
		if p.Passes != 0 {
			size += 1 + protowire.SizeVarint(uint64(p.Passes))
		}
		if p.BoundHit {
			size += 2
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		if p.Path != "" {
			b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), p.Path)
		}
		if p.Kind != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), uint64(p.Kind))
		}
		if p.Passes != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), uint64(p.Passes))
		}
		if p.BoundHit {
			b = protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.VarintType), 1)
		}
	}
	return b
}

// envelope is what scanEnvelope reads of an InvokeToolRequest.
type envelope struct {
	tool, callID, idemKey string
	args                  []byte
	hasArgs, hasKey       bool
}

// IdempotencyKeyHeader is the gRPC metadata that carries an idempotency
// key (like InvokeToolRequest.idempotency_key).
const IdempotencyKeyHeader = "idempotency-key"

// scanEnvelope reads the envelope with protowire. It reports false for
// anything but fields 1–4, each at most once, length-delimited, strings
// valid UTF-8 — and for arguments_json (field 5): JSON text is parsed by
// the pipeline, never forwarded, so such a request takes the decode path.
func scanEnvelope(b []byte) (env envelope, ok bool) {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 4 || seen&(1<<num) != 0 {
			// Field 5 (arguments_json) lands here too, by design.
			return env, false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return env, false
		}
		b = b[n+m:]
		switch num {
		case 1:
			if !utf8.Valid(v) {
				return env, false
			}
			env.tool = string(v)
		case 2:
			env.args, env.hasArgs = v, true
		case 3:
			if !utf8.Valid(v) {
				return env, false
			}
			env.callID = string(v)
		case 4:
			if !utf8.Valid(v) {
				return env, false
			}
			env.idemKey, env.hasKey = string(v), true
		}
	}
	return env, true
}

// streamWorkers is the number of long-lived goroutines the server runs
// calls on (grpc.NumStreamWorkers). A call needs ~16 KiB of stack through
// the interceptor chain and the backend call; a fresh goroutine per call
// grows its stack by copying every time (about 7% of the gateway's CPU in
// the benchmark profile), a reused one keeps its grown stack. Calls beyond
// the workers still get their own goroutine, so this bounds nothing.
func streamWorkers() uint32 { return uint32(32 * runtime.GOMAXPROCS(0)) }
