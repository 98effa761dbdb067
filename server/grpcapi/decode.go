package grpcapi

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/server/rawcodec"
)

// gRPC reports a request its codec cannot decode (invalid UTF-8 in a
// string, truncated bytes, nesting past protobuf's recursion limit) as
// Internal, which blames the server for the caller's bytes, and writes that
// status itself. The services' descriptors are wrapped so every request is
// decoded as a rawcodec.Checked, whose failure the handler answers with
// InvalidArgument naming the message it should have been. (InvokeTool
// decodes its request itself, gateway_service.go, with the same answer.)

// undecodableRequest is the InvalidArgument for a request that did not decode.
func undecodableRequest(m proto.Message, err error) error {
	return status.Errorf(codes.InvalidArgument, "request is not a valid %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
}

// checkedDecode decodes into m through dec, answering a decode failure
// with InvalidArgument.
func checkedDecode(dec func(any) error, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return dec(m)
	}
	c := &rawcodec.Checked{Msg: pm}
	if err := dec(c); err != nil {
		return err
	}
	if c.Err != nil {
		return undecodableRequest(pm, c.Err)
	}
	return nil
}

// decodeFailuresAreInvalid returns a copy of desc whose handlers answer an
// undecodable request with InvalidArgument.
func decodeFailuresAreInvalid(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		h := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			return h(srv, ctx, func(v any) error { return checkedDecode(dec, v) }, ic)
		}
		d.Methods[i] = m
	}
	d.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		h := s.Handler
		s.Handler = func(srv any, stream grpc.ServerStream) error { return h(srv, decodingStream{stream}) }
		d.Streams[i] = s
	}
	return &d
}

// decodingStream answers an undecodable stream message with InvalidArgument.
type decodingStream struct{ grpc.ServerStream }

func (s decodingStream) RecvMsg(m any) error { return checkedDecode(s.ServerStream.RecvMsg, m) }
