package bareproxy

import (
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// DefaultMethodMap sends agents' InvokeTool calls to the backend's Invoke —
// the realistic bare hop. Fields 1–3 of the two requests and 1–2 of the two
// responses are wire-identical, so the bytes need no change.
func DefaultMethodMap() map[string]string {
	return map[string]string{
		gatewayv1.ToolGatewayService_InvokeTool_FullMethodName: gatewayv1.ToolBackendService_Invoke_FullMethodName,
	}
}

// Options configure a Proxy.
type Options struct {
	// Decode makes the proxy unmarshal each request as an InvokeToolRequest,
	// walk its arguments Struct, and re-marshal it as an InvokeRequest before
	// forwarding. Responses are still forwarded as raw bytes.
	Decode bool
	// MethodMap renames methods on the way to the backend; methods not in it
	// are forwarded under their own name. Nil means DefaultMethodMap().
	MethodMap map[string]string
}

// Proxy forwards every unary call it receives to one backend connection.
type Proxy struct {
	backend grpc.ClientConnInterface
	opts    Options
}

// New returns a Proxy that forwards to backend.
func New(backend grpc.ClientConnInterface, opts Options) *Proxy {
	if opts.MethodMap == nil {
		opts.MethodMap = DefaultMethodMap()
	}
	return &Proxy{backend: backend, opts: opts}
}

// ServerOptions are the options a grpc.Server needs to act as this proxy:
// the raw codec and the catch-all handler. Register no services on it.
func (p *Proxy) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(Codec{}),
		grpc.UnknownServiceHandler(p.Handle),
	}
}

var codecOpt = grpc.ForceCodecV2(Codec{})

// Handle is the grpc.StreamHandler for every method. It supports unary calls
// only: one request message in, one response message out.
func (p *Proxy) Handle(_ any, stream grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "bareproxy: no method name on the stream")
	}
	if to, ok := p.opts.MethodMap[method]; ok {
		method = to
	}

	req := &Frame{}
	if err := stream.RecvMsg(req); err != nil {
		return err
	}
	defer req.Free()
	// A unary client half-closes right after its one message; anything else
	// is a streaming call this proxy does not claim to carry.
	var extra Frame
	if err := stream.RecvMsg(&extra); !errors.Is(err, io.EOF) {
		extra.Free()
		if err != nil {
			return err
		}
		return status.Errorf(codes.Unimplemented, "bareproxy: %s sent more than one message; only unary calls are forwarded", method)
	}

	out := req
	if p.opts.Decode {
		b, err := reencode(req.Bytes())
		if err != nil {
			return err
		}
		out = NewFrame(b)
	}

	ctx := stream.Context()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		// Reserved and pseudo headers in md are dropped by the transport.
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	var header, trailer metadata.MD
	resp := &Frame{}
	defer resp.Free()
	err := p.backend.Invoke(ctx, method, out, resp, codecOpt, grpc.Header(&header), grpc.Trailer(&trailer))
	if len(header) > 0 {
		if herr := stream.SetHeader(header); herr != nil && err == nil {
			err = herr
		}
	}
	if len(trailer) > 0 {
		stream.SetTrailer(trailer)
	}
	if err != nil {
		// A status error from the backend is returned as is, so its code,
		// message and details reach the caller unchanged.
		return err
	}
	return stream.SendMsg(resp)
}

// reencode is decode mode's work: parse, walk, rebuild, marshal.
func reencode(b []byte) ([]byte, error) {
	var in gatewayv1.InvokeToolRequest
	if err := proto.Unmarshal(b, &in); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "bareproxy: request is not an InvokeToolRequest: %v", err)
	}
	walkStruct(in.GetArguments())
	return proto.Marshal(&gatewayv1.InvokeRequest{
		Tool:      in.GetTool(),
		Arguments: in.GetArguments(),
		CallId:    in.GetCallId(),
	})
}

// walkStruct visits every value, as a normalizer must at minimum, and
// returns the number of string leaves so the walk cannot be optimized away.
func walkStruct(s *structpb.Struct) int {
	n := 0
	for _, v := range s.GetFields() {
		n += walkValue(v)
	}
	return n
}

func walkValue(v *structpb.Value) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return 1
	case *structpb.Value_StructValue:
		return walkStruct(k.StructValue)
	case *structpb.Value_ListValue:
		n := 0
		for _, e := range k.ListValue.GetValues() {
			n += walkValue(e)
		}
		return n
	}
	return 0
}
