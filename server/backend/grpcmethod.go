package backend

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry/schema"
	"github.com/flowdrop/gateway/server/pipeline"
)

// GRPCMethod is the backend kind of a tool whose spec is a unary method of
// any gRPC service. The normalized, validated arguments are read into the
// request message with protojson, strictly (an unknown field is
// InvalidArgument naming it); the response message, written with
// protojson, is the tool's result. The method's descriptors are the ones
// stored with the tool's revision, resolved once when the revision was
// compiled (registry.Entry.Method): no server reflection at call time.
//
// It shares the ToolBackendService kind's connection pool, dial options,
// deadline budget, metadata and failure classification.
type GRPCMethod struct{ ts *ToolService }

// NewGRPCMethod is the kind over ts's connections.
func NewGRPCMethod(ts *ToolService) *GRPCMethod { return &GRPCMethod{ts: ts} }

// Invoke calls the tool's method.
func (g *GRPCMethod) Invoke(ctx context.Context, c *pipeline.Call) (pipeline.Result, error) {
	md, spec := c.Entry.Method, c.Entry.Tool.Spec
	if md == nil || spec == nil || spec.GRPCMethod == nil {
		return pipeline.Result{}, fmt.Errorf("tool %q has no gRPC method", c.Tool) // Internal: dispatch's mistake
	}
	args, err := c.Args()
	if err != nil {
		return pipeline.Result{}, err
	}
	req, err := requestMessage(c.Tool, md.Input(), args)
	if err != nil {
		return pipeline.Result{}, err
	}
	if err := g.ts.checkSendSize(c, proto.Size(req)); err != nil {
		return pipeline.Result{}, err
	}
	resp := dynamicpb.NewMessage(md.Output())
	if err := g.ts.callMethod(ctx, c, spec.GRPCMethod.Target, spec.GRPCMethod.Method, req, resp); err != nil {
		return pipeline.Result{}, err
	}
	v, err := resultValue(resp)
	if err != nil {
		return pipeline.Result{}, g.ts.failure(c, 0, "", status.Errorf(codes.Internal, "the backend's %s does not convert to JSON: %v", md.Output().FullName(), err))
	}
	return pipeline.Result{Value: v}, nil
}

// requestMessage reads the arguments into a new request message through
// their JSON form, as protojson reads JSON in strict mode.
func requestMessage(tool string, md protoreflect.MessageDescriptor, args *structpb.Struct) (*dynamicpb.Message, error) {
	js, err := protojson.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("tool %q: encoding the arguments: %w", tool, err)
	}
	req := dynamicpb.NewMessage(md)
	if err := (protojson.UnmarshalOptions{}).Unmarshal(js, req); err != nil {
		msg := requestRefusal(err)
		return nil, &pipeline.Error{Code: pipeline.InvalidArgument, Kind: pipeline.KindValidation, Reason: pipeline.ReasonArgumentsInvalid,
			Tool: tool, Message: fmt.Sprintf("tool %q: arguments do not read as %s: %s", tool, md.FullName(), msg),
			Violations: []schema.Violation{{Message: msg}}}
	}
	return req, nil
}

// resultValue is the response message's JSON form as a Struct Value
// (protojson's defaults: lowerCamel names, zero values left out, 64-bit
// integers as strings, so they arrive exactly).
func resultValue(m proto.Message) (*structpb.Value, error) {
	js, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	v := new(structpb.Value)
	if err := protojson.Unmarshal(js, v); err != nil {
		return nil, err
	}
	return v, nil
}

// protojsonPosition is protojson's error prefix: "proto:" with a space or
// a no-break space, then the position in the gateway's own JSON, which
// means nothing to the caller.
var protojsonPosition = regexp.MustCompile(`^proto:[\s\x{00a0}]*(\(line \d+:\d+\):[\s\x{00a0}]*)?`)

// requestRefusal is protojson's refusal in words safe for the caller: the
// field it names, never the value it quotes (which may be sensitive).
func requestRefusal(err error) string {
	msg := protojsonPosition.ReplaceAllString(err.Error(), "")
	switch {
	case strings.HasPrefix(msg, "unknown field "), strings.HasPrefix(msg, "duplicate field "),
		strings.HasPrefix(msg, "error parsing ") && strings.Contains(msg, ", oneof "):
		return msg
	case strings.HasPrefix(msg, "invalid value for ") && strings.Contains(msg, " field "):
		head, _, _ := strings.Cut(msg, ": ")
		return head
	case strings.HasPrefix(msg, "invalid value for ") && strings.Contains(msg, " key"):
		head, _, _ := strings.Cut(msg, ": ")
		return head
	}
	return "a value does not fit its field's type"
}
