package demotools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"sync"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

//go:embed tools.yaml
var toolsYAML []byte

// BackendPlaceholder is the text in the embedded tools file that ToolsYAML
// replaces with the example service's address.
const BackendPlaceholder = "${BACKEND}"

// ToolsYAML returns the demo tools file with every backend set to addr.
func ToolsYAML(addr string) []byte {
	return bytes.ReplaceAll(toolsYAML, []byte(BackendPlaceholder), []byte(addr))
}

// HandlerFunc runs one tool. Returning a non-nil error sends it as the RPC
// status; a tool-level failure is a response with IsError set.
type HandlerFunc func(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error)

// Call is one request the service received, with its incoming metadata.
type Call struct {
	Request  *gatewayv1.InvokeRequest
	Metadata metadata.MD
}

// Service implements gatewayv1.ToolBackendServiceServer.
type Service struct {
	gatewayv1.UnimplementedToolBackendServiceServer

	handlers map[string]HandlerFunc
	record   bool

	mu    sync.Mutex
	calls []Call
}

// Option configures a Service.
type Option func(*Service)

// WithHandler adds (or replaces) the handler for a tool name; tests use it
// for slow or panicking tools.
func WithHandler(tool string, h HandlerFunc) Option {
	return func(s *Service) { s.handlers[tool] = h }
}

// WithRecording keeps every received call for Calls (tests); without it
// nothing is kept, so a long-running demo does not grow.
func WithRecording() Option { return func(s *Service) { s.record = true } }

// New returns the example service with the demo tools.
func New(opts ...Option) *Service {
	s := &Service{handlers: map[string]HandlerFunc{
		"create_note":     echo,
		"apply_ops":       echo,
		"update_settings": echo,
		"run_command":     runCommand,
	}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Invoke records the call and dispatches it to the tool's handler.
func (s *Service) Invoke(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	if s.record {
		md, _ := metadata.FromIncomingContext(ctx)
		s.mu.Lock()
		s.calls = append(s.calls, Call{Request: proto.CloneOf(req), Metadata: md.Copy()})
		s.mu.Unlock()
	}
	h, ok := s.handlers[req.GetTool()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "example tools: no tool %q here", req.GetTool())
	}
	return h(ctx, req)
}

// Calls returns every call received so far, oldest first (WithRecording only).
func (s *Service) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsFor returns the received calls for one tool.
func (s *Service) CallsFor(tool string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Request.GetTool() == tool {
			out = append(out, c)
		}
	}
	return out
}

// NewGRPCServer returns a gRPC server with the service, health (SERVING) and
// reflection registered. A panicking handler becomes codes.Internal (the
// backend's own recovery), logged with its stack to logger (nil: discard).
func NewGRPCServer(s *Service, logger *slog.Logger, opts ...grpc.ServerOption) *grpc.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(
			recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
				logger.ErrorContext(ctx, "example tools: handler panicked", "panic", fmt.Sprint(p))
				return status.Error(codes.Internal, "example tools: internal error")
			}))),
	}, opts...)
	gs := grpc.NewServer(opts...)
	gatewayv1.RegisterToolBackendServiceServer(gs, s)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	return gs
}

// echo returns {"tool", "arguments", "call_id", "caller"} as received.
func echo(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	out := &structpb.Struct{Fields: map[string]*structpb.Value{
		"tool":    structpb.NewStringValue(req.GetTool()),
		"call_id": structpb.NewStringValue(req.GetCallId()),
	}}
	args := req.GetArguments()
	if args == nil {
		args = &structpb.Struct{}
	}
	out.Fields["arguments"] = structpb.NewStructValue(args)
	if c := req.GetCaller(); c != nil {
		out.Fields["caller"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"subject": structpb.NewStringValue(c.GetSubject()),
			"method":  structpb.NewStringValue(c.GetMethod()),
		}})
	}
	return &gatewayv1.InvokeResponse{Result: structpb.NewStructValue(out)}, nil
}

// runCommand pretends to run a command; "false" is a tool-level failure.
func runCommand(ctx context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	if req.GetArguments().GetFields()["command"].GetStringValue() == "false" {
		return &gatewayv1.InvokeResponse{
			Result:  structpb.NewStringValue("command exited with status 1 (simulated; nothing was executed)"),
			IsError: true,
		}, nil
	}
	return echo(ctx, req)
}
