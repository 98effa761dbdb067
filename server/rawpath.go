package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unicode/utf8"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec used for every other message
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The raw InvokeTool path (issue 3 §5): a request that normalization would
// not change and that the fast validator accepts is forwarded as received —
// no decode, no re-encode — and the backend's response bytes are returned
// as the gateway's response.
//
// Wire facts it relies on (proto/flowdrop/gateway/v1):
//   - InvokeToolRequest {tool=1, arguments=2, call_id=3} and the backend's
//     InvokeRequest {tool=1, arguments=2, call_id=3, caller=4} agree on 1–3,
//     so the backend request is the received bytes plus a field 4;
//   - InvokeResponse {result=1, is_error=2} is InvokeToolResponse without
//     repairs (field 3), so with no repairs the bytes are the response.
//
// Every request is received undecoded. The handler scans the envelope
// (tool, call_id, the arguments' bytes); when a configured stage needs the
// decoded arguments before normalization (audit with arguments, string and
// depth limits, CEL rules: needsDecodedArgs) it decodes the whole request
// and the call takes today's path unchanged. Otherwise the chain sees an
// InvokeToolRequest without arguments and normalizeInterceptor finishes the
// decision (invokeRaw): fast, or decode the arguments and go on as today.

// rawInvokeToolRequest is an InvokeToolRequest kept as received.
type rawInvokeToolRequest struct {
	buf []byte // the whole message; never modified
	// held is gRPC's buffer behind buf when it came in one piece: referenced
	// (not copied) until release, after which buf must not be read.
	held         mem.Buffer
	tool, callID string
	args         []byte // buf's arguments field (the Struct's bytes)
	hasArgs      bool
}

// release returns the received buffer to gRPC's pool (once the handler is
// done; a backend send still in flight holds its own reference).
func (r *rawInvokeToolRequest) release() {
	if r.held != nil {
		r.held.Free()
		r.held = nil
	}
}

// rawBackendRequest is the backend's InvokeRequest: the received request's
// bytes followed by the encoded caller (field 4), sent as two buffers so
// the request is not copied.
type rawBackendRequest struct {
	req    *rawInvokeToolRequest
	caller []byte
}

// rawCall is what a raw InvokeTool call needs up front, allocated in one
// piece: the received request, the call state and the request the
// interceptor chain sees (without arguments).
type rawCall struct {
	raw  rawInvokeToolRequest
	call call
	req  gatewayv1.InvokeToolRequest
}

// rawInvokeToolResponse is an InvokeToolResponse already encoded.
type rawInvokeToolResponse struct{ buf []byte }

// rawFrame is an undecoded backend response (client side).
type rawFrame struct{ buf []byte }

// rawCodec moves the raw types above as bytes and every other message
// through the standard proto codec. Its name is "proto", so the content
// type on the wire is unchanged for peers.
type rawCodec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (rawCodec) Name() string { return "proto" }

// Marshal's result belongs to gRPC, which frees it once sent: a held
// buffer gets a reference of its own.
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *rawInvokeToolResponse:
		return mem.BufferSlice{mem.SliceBuffer(m.buf)}, nil
	case *rawBackendRequest:
		var head mem.Buffer = mem.SliceBuffer(m.req.buf)
		if h := m.req.held; h != nil {
			h.Ref()
			head = h
		}
		if len(m.caller) == 0 {
			return mem.BufferSlice{head}, nil
		}
		return mem.BufferSlice{head, mem.SliceBuffer(m.caller)}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal keeps what gRPC received rather than copying it where it can.
// gRPC frees data's buffers when Unmarshal returns, so the request takes a
// reference (released by the handler); other messages keep an unpooled
// buffer as is (nothing recycles it) and copy a pooled or split one.
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *rawInvokeToolRequest:
		if len(data) == 1 {
			data[0].Ref()
			m.held, m.buf = data[0], data[0].ReadOnlyData()
			return nil
		}
		m.buf = data.Materialize()
		return nil
	case *rawFrame:
		if len(data) == 1 {
			if sb, ok := data[0].(mem.SliceBuffer); ok {
				m.buf = sb
				return nil
			}
		}
		m.buf = data.Materialize()
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// rawServerOption installs the codec on the gateway's gRPC server.
func rawServerOption() grpc.ServerOption { return grpc.ForceServerCodecV2(rawCodec{}) }

// streamWorkers is the number of long-lived goroutines the server runs
// calls on (grpc.NumStreamWorkers). A call needs ~16 KiB of stack through
// the interceptor chain and the backend call; a fresh goroutine per call
// grows its stack by copying every time (about 7% of the gateway's CPU in
// the benchmark profile), a reused one keeps its grown stack. Calls beyond
// the workers still get their own goroutine, so this bounds nothing.
func streamWorkers() uint32 { return uint32(32 * runtime.GOMAXPROCS(0)) }

// rawGatewayServiceDesc replaces the generated ToolGatewayService
// descriptor: same service, method and proto file (reflection and grpcurl
// see no difference), with a handler that receives the request undecoded.
var rawGatewayServiceDesc = grpc.ServiceDesc{
	ServiceName: gatewayv1.ToolGatewayService_ServiceDesc.ServiceName,
	HandlerType: (*gatewayv1.ToolGatewayServiceServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "InvokeTool",
		Handler:    rawInvokeToolHandler,
	}},
	Streams:  []grpc.StreamDesc{},
	Metadata: gatewayv1.ToolGatewayService_ServiceDesc.Metadata,
}

func rawInvokeToolHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	g := srv.(*gatewayService)
	rc := new(rawCall)
	raw := &rc.raw
	if err := dec(raw); err != nil {
		return nil, err
	}
	// Everything that reads raw.buf runs inside this call: the decoded
	// paths copy what they keep (proto.Unmarshal does not alias its input).
	defer raw.release()
	req, ctx, err := g.p.rawRequest(ctx, rc)
	if err != nil {
		return nil, err
	}
	info, handler := g.rawBound()
	if interceptor == nil {
		return handler(ctx, req)
	}
	return interceptor(ctx, req, info, handler)
}

// rawStats counts the raw path's decisions; tests read them to see which
// path a call took (no timing involved).
var rawStats struct {
	fast        atomic.Int64 // forwarded as received
	decodedArgs atomic.Int64 // arguments decoded in normalizeInterceptor
	decodedAll  atomic.Int64 // whole request decoded in the handler
}

// errUnmarshal is the status gRPC itself returns for an undecodable request.
func errUnmarshal(err error) error {
	return status.Errorf(codes.Internal, "grpc: error unmarshalling request: %v", err)
}

// rawRequest turns the received bytes into the request the interceptor
// chain sees: fully decoded (today's path) unless the envelope is plain and
// no stage before normalization needs the arguments; then an
// InvokeToolRequest without arguments, with the call state (holding raw) in
// the returned context.
func (p *pipeline) rawRequest(ctx context.Context, rc *rawCall) (*gatewayv1.InvokeToolRequest, context.Context, error) {
	raw := &rc.raw
	if raw.scan() && raw.hasArgs && !p.needsDecodedArgs(raw.tool) {
		c := &rc.call
		c.tool, c.callID, c.raw = raw.tool, raw.callID, raw
		rc.req.Tool, rc.req.CallId = raw.tool, raw.callID
		return &rc.req, withCall(ctx, c), nil
	}
	rawStats.decodedAll.Add(1)
	req := new(gatewayv1.InvokeToolRequest)
	if err := proto.Unmarshal(raw.buf, req); err != nil {
		return nil, ctx, errUnmarshal(err)
	}
	return req, ctx, nil
}

// scan reads the envelope with protowire. It reports false for anything
// but fields 1–3, each at most once, length-delimited, strings valid
// UTF-8: unknown fields in particular (a field 4 must never reach a backend
// from a caller) go to the decoding path.
func (r *rawInvokeToolRequest) scan() bool {
	b := r.buf
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 3 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
		switch num {
		case 1:
			if !utf8.Valid(v) {
				return false
			}
			r.tool = string(v)
		case 2:
			r.args, r.hasArgs = v, true
		case 3:
			if !utf8.Valid(v) {
				return false
			}
			r.callID = string(v)
		}
	}
	return true
}

// needsDecodedArgs reports whether a configured policy stage needs the
// decoded arguments for tool: the audit sink (it records them), string and
// depth limits (they walk them) and CEL rules that apply to the tool. The
// argument-size limit and the caller-based stages (authentication, roles,
// rate limit, in-flight limit) work without them.
func (p *pipeline) needsDecodedArgs(tool string) bool {
	return p.audit != nil || p.limits.MaxStringLength > 0 || p.limits.MaxDepth > 0 || p.rules.AppliesTo(tool)
}

// invokeRaw is normalizeInterceptor's part for a request received raw (c
// has no arguments yet). When normalization would change nothing and the
// fast validator accepts the arguments on the wire, it dispatches the
// received bytes and returns done: the validate and policy stages after
// normalization have nothing to do then (validity is proved; the policy
// stage's limits and rules are off, or needsDecodedArgs would have decoded
// the request). Otherwise it decodes the arguments into r and c and returns
// not done: the call goes on exactly as a decoded one.
func (p *pipeline) invokeRaw(ctx context.Context, c *call, r *gatewayv1.InvokeToolRequest, raw *rawInvokeToolRequest) (resp any, done bool, err error) {
	e, ok := p.reg.Lookup(c.tool)
	if ok && (p.limits.MaxArgumentBytes <= 0 || len(raw.args) <= p.limits.MaxArgumentBytes) &&
		!e.Plan.NeedsRepairWire(raw.args) && e.FastValidWire(raw.args) {
		rawStats.fast.Add(1)
		c.entry = e
		if h := testHookNormalize.Load(); h != nil {
			(*h)(c.tool)
		}
		c.pol.validation = "ok"
		out, err := p.dispatchRaw(ctx, c, raw)
		if err != nil {
			return nil, true, c.fail(err)
		}
		return out, true, nil
	}
	rawStats.decodedArgs.Add(1)
	args := new(structpb.Struct)
	if err := proto.Unmarshal(raw.args, args); err != nil {
		return nil, true, errUnmarshal(err)
	}
	r.Arguments, c.args = args, args
	if c.pol.sent == nil {
		c.pol.sent = args // what the audit interceptor would have recorded
	}
	// The screen stage saw no arguments: apply its size limit now (the
	// encoded size is what proto.Size measures).
	if err := p.limits.Check(c.tool, args); err != nil {
		return nil, true, c.fail(err)
	}
	return nil, false, nil
}

// dispatchRaw is dispatch (policy.go) for the raw path: the in-flight
// limit, the backend latency metric and the backend code for the audit
// line, around forwardRaw.
func (p *pipeline) dispatchRaw(ctx context.Context, c *call, raw *rawInvokeToolRequest) (any, error) {
	release, err := p.inflight.Acquire(c.tool)
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	resp, err := p.forwardRaw(ctx, c, raw)
	code := "OK"
	if err != nil {
		code = status.Code(grpcError(err)).String()
	}
	c.pol.backend = code
	p.metrics.observeBackend(c.tool, code, time.Since(start))
	return resp, err
}

// forwardRaw sends the received bytes plus the caller (field 4) to the
// backend and returns its response bytes as the gateway's response.
func (p *pipeline) forwardRaw(ctx context.Context, c *call, raw *rawInvokeToolRequest) (any, error) {
	callerField, err := encodeCallerField(c.caller)
	if err != nil {
		return nil, fmt.Errorf("encoding the caller: %w", err)
	}
	resp := new(rawFrame)
	if err := p.callBackend(ctx, c, &rawBackendRequest{req: raw, caller: callerField}, resp); err != nil {
		return nil, err
	}
	if plainInvokeResponse(resp.buf) {
		return &rawInvokeToolResponse{buf: resp.buf}, nil
	}
	// Unknown fields (a newer backend) must not reach the caller as, say,
	// repairs: rebuild the response the way the decoding path does.
	var ir gatewayv1.InvokeResponse
	if err := proto.Unmarshal(resp.buf, &ir); err != nil {
		return nil, &backendError{tool: c.tool, target: c.entry.Tool.Backend,
			err: status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)}
	}
	return &gatewayv1.InvokeToolResponse{Result: ir.GetResult(), IsError: ir.GetIsError()}, nil
}

// encodeCallerField encodes InvokeRequest.caller (field 4) on its own, to
// follow the received request's bytes (fields 1–3) on the wire. By hand
// with protowire, as proto.Marshal would: the reflective marshaller took
// ~2.5 µs a call for these three fields. TestEncodeCallerField holds it to
// proto.Marshal's bytes.
func encodeCallerField(caller *gatewayv1.Caller) ([]byte, error) {
	if caller == nil {
		return nil, nil
	}
	size, valid := 0, true
	eachCallerField(caller, func(_ protowire.Number, s string) {
		size += 1 + protowire.SizeBytes(len(s)) // tags 1–3 take one byte
		valid = valid && utf8.ValidString(s)
	})
	if !valid { // proto3 strings must be valid UTF-8; proto.Marshal refuses them too
		return nil, errors.New("caller identity is not valid UTF-8")
	}
	out := make([]byte, 0, 1+protowire.SizeVarint(uint64(size))+size)
	out = protowire.AppendTag(out, 4, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(size))
	eachCallerField(caller, func(num protowire.Number, s string) {
		out = protowire.AppendString(protowire.AppendTag(out, num, protowire.BytesType), s)
	})
	return out, nil
}

// eachCallerField calls f for each field of c that proto.Marshal writes, in
// field order: subject (1) and method (2) unless empty (proto3), every role (3).
func eachCallerField(c *gatewayv1.Caller, f func(num protowire.Number, s string)) {
	if s := c.GetSubject(); s != "" {
		f(1, s)
	}
	if s := c.GetMethod(); s != "" {
		f(2, s)
	}
	for _, r := range c.GetRoles() {
		f(3, r)
	}
}

// plainInvokeResponse reports whether b holds only InvokeResponse's fields
// (result = 1, is_error = 2), each at most once with its wire type.
func plainInvokeResponse(b []byte) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || seen&(1<<(num&7)) != 0 {
			return false
		}
		switch {
		case num == 1 && typ == protowire.BytesType, num == 2 && typ == protowire.VarintType:
		default:
			return false
		}
		seen |= 1 << num
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

var _ encoding.CodecV2 = rawCodec{}
