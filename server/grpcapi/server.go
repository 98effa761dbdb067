package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/search"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/observe"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/flowdrop/gateway/server/rawcodec"
	"github.com/flowdrop/gateway/server/repairstats"
)

// Config is what the gRPC face is built from.
type Config struct {
	Pipeline *pipeline.Pipeline
	// Registry is the live registry. The policy (authentication of every
	// call; the roles and the registry rate limit, caller × method, of the
	// methods other than InvokeTool, whose policy is the stages') is the
	// pipeline's snapshot (pipeline.Policy), read per call.
	Registry *registry.Registry
	Metrics  *observe.Metrics
	Log      *slog.Logger
	// OKCallsLevel is the level of a successful call's access-log line
	// (observe.AccessLevel): INFO, the zero value, or DEBUG.
	OKCallsLevel slog.Level
	// StrictLint refuses every registration with provider-lint errors.
	StrictLint bool
	// LintProfiles are the profiles registrations are linted against (and
	// StrictLint enforces); none: registry.DefaultLintProfiles().
	LintProfiles []lint.Profile
	// ServerOptions are added to the server's (credentials, message
	// sizes, transport bounds, stats handlers).
	ServerOptions []grpc.ServerOption
	// PreAuth bounds the streams let through before authentication
	// (tap.go).
	PreAuth PreAuthBounds
	// RepairStats answers GetRepairStats (nil: FailedPrecondition).
	RepairStats *repairstats.Stats
	// Search serves SearchTools (search_service.go); nil: Unimplemented.
	Search *search.Index
	// UserTokens is the user-consent identity mode in force (nil, or
	// returning nil: not configured), listed and revoked by the admin.
	UserTokens func() *identity.Consent
}

// Server is the gateway's gRPC server: ToolGatewayService (raw InvokeTool
// and InvokeToolStream) behind the interceptor chains, ToolRegistryService, health, reflection.
type Server struct {
	gs       *grpc.Server
	health   *health.Server
	gateway  *gatewayService
	registry *registryService
}

// New builds the server; Serve starts it.
func New(cfg Config) *Server {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	tap := newPreAuthTap(cfg.Pipeline, cfg.PreAuth, cfg.Metrics.CountGRPCPreAuth)
	opts := append(cfg.ServerOptions,
		grpc.InTapHandle(tap.handle), // before any of a stream's message is read
		// One interceptor: chainUnary composes the chain with one small
		// allocation per call where gRPC's chaining makes a closure per level.
		grpc.UnaryInterceptor(messageReceived(chainUnary(unaryChain(&cfg, log)...))),
		grpc.ChainStreamInterceptor(streamChain(&cfg, log)...),
		rawcodec.ServerOption(), // InvokeTool requests arrive undecoded
		grpc.NumStreamWorkers(streamWorkers()),
	)
	gs := grpc.NewServer(opts...)
	s := &Server{gs: gs, gateway: newGatewayService(cfg.Pipeline, invokeStreamChain(&cfg, log))}
	gs.RegisterService(&rawGatewayServiceDesc, s.gateway)
	s.registry = registerRegistryService(gs, cfg.Registry, WithStrictLint(cfg.StrictLint), WithLintProfiles(cfg.LintProfiles...), WithToolFilter(cfg.Pipeline.Visible),
		WithBackendFilter(cfg.Pipeline.SeesBackends), WithOptionalNulls(cfg.Pipeline.DropsOptionalNulls), WithRepairStats(cfg.RepairStats),
		WithSearch(cfg.Search), WithUserTokens(cfg.UserTokens))
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(gatewayv1.ToolGatewayService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(gatewayv1.ToolRegistryService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, s.health)
	if err := registerReflection(gs); err != nil {
		// The embedded descriptors are built with the code (./generate;
		// a test holds them equal): serve reflection without comments
		// rather than not at all.
		log.Error("gRPC reflection without source info", "error", err.Error())
		reflection.Register(gs)
	}
	cfg.Metrics.GRPC().InitializeMetrics(gs)
	return s
}

// SetInvokeServing sets the health of the gateway's calls: the server's
// overall status ("") and ToolGatewayService's, SERVING or NOT_SERVING
// (the registry service's stays as it is). After Shutdown it does nothing.
func (s *Server) SetInvokeServing(serving bool) {
	st := healthpb.HealthCheckResponse_SERVING
	if !serving {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(gatewayv1.ToolGatewayService_ServiceDesc.ServiceName, st)
}

// DecodedWhole counts InvokeTool requests decoded whole (their envelope
// was not plain) since New.
func (s *Server) DecodedWhole() int64 { return s.gateway.decodedWhole.Load() }

// Serve accepts connections on lis until Shutdown; it returns nil after a
// Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Shutdown turns health NOT_SERVING, ends the WatchTools streams (they
// never end on their own; GracefulStop would wait for them), lets calls in
// flight finish until ctx is done, then cuts off the rest. It returns ctx's
// error if calls had to be cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	s.registry.Close()
	drained := make(chan struct{})
	go func() { s.gs.GracefulStop(); close(drained) }()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		s.gs.Stop()
		<-drained
		return ctx.Err()
	}
}
