package server_test

// Transport to backends end to end (issue 12 §3): TLS and mTLS with a test
// CA, per target (policy backend_tls) and per tool (spec.tls); a plaintext
// backend refused when TLS is required; round_robin over replicas; retries
// of idempotent tools only. Real gRPC servers on 127.0.0.1.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/testca"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/backend"
)

// transportFiles are a test CA's files on disk, as an operator has them.
type transportFiles struct {
	ca                    *testca.CA
	dir                   string
	caFile                string
	clientCert, clientKey string
}

func newTransportFiles(t *testing.T) transportFiles {
	t.Helper()
	f := transportFiles{ca: testca.New(t), dir: t.TempDir()}
	cert, key := f.ca.Issue(t, "flowdrop-gateway", false)
	f.caFile, f.clientCert, f.clientKey = f.write(t, "ca.pem", f.ca.PEM), f.write(t, "client.pem", cert), f.write(t, "client-key.pem", key)
	return f
}

func (f transportFiles) write(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serverCreds is a TLS server for 127.0.0.1; with requireClient, only a
// client certificate from the CA gets in (mTLS).
func (f transportFiles) serverCreds(t *testing.T, requireClient bool) grpc.ServerOption {
	t.Helper()
	certPEM, keyPEM := f.ca.Issue(t, "backend", true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(f.ca.PEM)
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return grpc.Creds(credentials.NewTLS(cfg))
}

// serveTools serves a ToolBackendService with handlers on 127.0.0.1.
func serveTools(t *testing.T, handlers map[string]demotools.HandlerFunc, opts ...grpc.ServerOption) string {
	t.Helper()
	var sopts []demotools.Option
	for name, h := range handlers {
		sopts = append(sopts, demotools.WithHandler(name, h))
	}
	lis := gatewaytest.Listen(t)
	gs := demotools.NewGRPCServer(demotools.New(sopts...), nil, opts...)
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return lis.Addr().String()
}

// peerSeen answers with the client certificate's CN the backend saw ("" for
// none) and counts calls.
func peerSeen(calls *atomic.Int64) demotools.HandlerFunc {
	return func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		calls.Add(1)
		cn := ""
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
				cn = ti.State.PeerCertificates[0].Subject.CommonName
			}
		}
		return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(cn)}, nil
	}
}

func plainTool(name, target string, idempotent bool) func(string) registry.Tool {
	return func(string) registry.Tool {
		t := registry.Tool{Name: name, Backend: target, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{
			"type": structpb.NewStringValue("object")}}}
		if idempotent {
			yes := true
			t.Annotations = &registry.ToolAnnotations{IdempotentHint: &yes}
		}
		return t
	}
}

func invoke(ctx context.Context, env *gatewaytest.Env, tool string) (*gatewayv1.InvokeToolResponse, error) {
	return env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: &structpb.Struct{}})
}

// wantUnavailableNaming checks a refusal is Unavailable, names the tool and
// leaks none of the hidden strings (targets, paths).
func wantUnavailableNaming(t *testing.T, err error, tool, reason string, hidden ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), tool) {
		t.Errorf("%s: %v, want Unavailable naming %s (%s)", tool, err, tool, reason)
	}
	for _, h := range hidden {
		if strings.Contains(st.Message(), h) {
			t.Errorf("%s: message %q names %q (%s)", tool, st.Message(), h, reason)
		}
	}
}

// TestBackendTLS: per-target TLS (backend_tls) for ToolBackendService
// tools and per-tool TLS (spec.tls) for gRPC-method tools, mTLS with the
// gateway's client certificate, and no plaintext fallback.
func TestBackendTLS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	f := newTransportFiles(t)
	var tlsCalls, mtlsCalls, plainCalls atomic.Int64
	tlsAddr := serveTools(t, map[string]demotools.HandlerFunc{"tls.peer": peerSeen(&tlsCalls)}, f.serverCreds(t, false))
	mtlsAddr := serveTools(t, map[string]demotools.HandlerFunc{"mtls.peer": peerSeen(&mtlsCalls)}, f.serverCreds(t, true))
	plainAddr := serveTools(t, map[string]demotools.HandlerFunc{"plain.required": peerSeen(&plainCalls), "plain.open": peerSeen(&plainCalls)})
	_, mtlsPort, _ := strings.Cut(mtlsAddr, ":")

	// The TLS notes service, and a plaintext one, for spec.tls.
	tlsNotes := serveNotes(t, f.serverCreds(t, false))
	plainNotes := serveNotes(t)

	p := server.DemoPolicy()
	p.BackendTLS = []backend.TargetTLS{
		{Match: tlsAddr, TLS: registry.TransportSecurity{CAFile: f.caFile}},
		{Match: "127.0.0.*:" + mtlsPort, TLS: registry.TransportSecurity{CAFile: f.caFile, CertFile: f.clientCert, KeyFile: f.clientKey}},
		{Match: plainAddr, TLS: registry.TransportSecurity{Require: true, CAFile: f.caFile}},
	}
	var logs syncBuffer
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithLogOutput(&logs),
		gatewaytest.WithTool(plainTool("tls.peer", tlsAddr, false)),
		gatewaytest.WithTool(plainTool("mtls.peer", mtlsAddr, false)),
		gatewaytest.WithTool(plainTool("plain.required", plainAddr, true)))

	cases := []struct {
		tool, wantCN, reason string
	}{
		{"tls.peer", "", "a TLS backend is reached with the CA from backend_tls; no client certificate is sent when none is set"},
		{"mtls.peer", "flowdrop-gateway", "an mTLS backend sees the gateway's client certificate (glob match on the address)"},
	}
	for _, tc := range cases {
		resp, err := invoke(ctx, env, tc.tool)
		if err != nil {
			t.Fatalf("%s: %v (%s)", tc.tool, err, tc.reason)
		}
		if got := resp.GetResult().GetStringValue(); got != tc.wantCN {
			t.Errorf("%s: backend saw client CN %q, want %q (%s)", tc.tool, got, tc.wantCN, tc.reason)
		}
	}

	// TLS required of a plaintext backend: Unavailable naming the tool, the
	// call never made in plaintext, even for an idempotent tool (retried,
	// still refused).
	_, err := invoke(ctx, env, "plain.required")
	wantUnavailableNaming(t, err, "plain.required", "TLS required: no plaintext fallback", plainAddr)
	if n := plainCalls.Load(); n != 0 {
		t.Errorf("the plaintext backend got %d calls from a tool that requires TLS, want 0", n)
	}

	// Per tool: a gRPC-method tool with spec.tls, through RegisterTool.
	src, err := grpcimport.FromDescriptorSet(notestest.DescriptorSet())
	if err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	register := func(prefix, target string, sec *gatewayv1.TransportSecurity) {
		t.Helper()
		tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: target, Prefix: prefix, Method: "Ping"})
		if err != nil || len(tools) != 1 {
			t.Fatalf("import Ping: %v %v", tools, err)
		}
		tools[0].Spec.Tls = sec
		if _, err := rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tools[0]}); err != nil {
			t.Fatalf("register %s: %v", tools[0].GetName(), err)
		}
	}
	register("tlsnotes.", tlsNotes.addr, &gatewayv1.TransportSecurity{CaFile: f.caFile, Require: true})
	register("plainnotes.", plainNotes.addr, &gatewayv1.TransportSecurity{CaFile: f.caFile, Require: true})
	register("sametarget.", tlsNotes.addr, nil) // no TLS: plaintext to a TLS server, its own connection

	if _, err := invoke(ctx, env, "tlsnotes.NotesService.Ping"); err != nil {
		t.Errorf("gRPC-method tool over spec.tls: %v, want the TLS service reached with the CA", err)
	}
	_, err = invoke(ctx, env, "plainnotes.NotesService.Ping")
	wantUnavailableNaming(t, err, "plainnotes.NotesService.Ping", "spec.tls required of a plaintext service", plainNotes.addr)
	_, err = invoke(ctx, env, "sametarget.NotesService.Ping")
	wantUnavailableNaming(t, err, "sametarget.NotesService.Ping",
		"a tool without TLS to the TLS service's target must not share the TLS tool's connection", tlsNotes.addr)
	if n := plainNotes.calls.Load(); n != 0 {
		t.Errorf("the plaintext notes service got %d calls, want 0", n)
	}

	// A TLS file the gateway cannot load is refused at registration, naming
	// the field and not the path.
	missing := filepath.Join(f.dir, "missing-ca.pem")
	bad, _, err := grpcimport.Tools(src, grpcimport.Options{Target: tlsNotes.addr, Prefix: "bad.", Method: "Ping"})
	if err != nil {
		t.Fatal(err)
	}
	bad[0].Spec.Tls = &gatewayv1.TransportSecurity{CaFile: missing}
	_, err = rc.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: bad[0]})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "spec.tls.ca_file") || strings.Contains(st.Message(), f.dir) {
		t.Errorf("register with a missing CA file: %v, want InvalidArgument naming spec.tls.ca_file, not the path", err)
	}

	// A tool whose TLS file went away after admission: Unavailable naming
	// the tool, not the path; never plaintext.
	goneCA := f.write(t, "gone-ca.pem", f.ca.PEM)
	register("gone.", plainNotes.addr, &gatewayv1.TransportSecurity{CaFile: goneCA})
	if err := os.Remove(goneCA); err != nil {
		t.Fatal(err)
	}
	_, err = invoke(ctx, env, "gone.NotesService.Ping")
	wantUnavailableNaming(t, err, "gone.NotesService.Ping", "a TLS file that does not load fails the call", goneCA, f.dir)
	if n := plainNotes.calls.Load(); n != 0 {
		t.Errorf("the plaintext notes service got %d calls after a CA file went away, want 0", n)
	}
	if !strings.Contains(logs.String(), "tls ca_file "+goneCA) {
		t.Errorf("the gateway's log does not name the TLS file that failed (%s):\n%s", goneCA, logs.String())
	}

	// The registry gives spec.tls back as registered (this caller sees
	// backends; one who does not gets only require).
	lr, err := rc.GetTool(ctx, &gatewayv1.GetToolRequest{Name: "tlsnotes.NotesService.Ping"})
	if err != nil {
		t.Fatal(err)
	}
	if got := lr.GetTool().GetSpec().GetTls(); got.GetCaFile() != f.caFile || !got.GetRequire() {
		t.Errorf("GetTool spec.tls = %v, want ca_file and require as registered", got)
	}
}

// notesServer is a NotesService on 127.0.0.1 counting calls.
type notesServer struct {
	addr  string
	calls atomic.Int64
}

func serveNotes(t *testing.T, opts ...grpc.ServerOption) *notesServer {
	t.Helper()
	n := &notesServer{}
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n.calls.Add(1)
		return h(ctx, req)
	}
	lis := gatewaytest.Listen(t)
	gs := grpc.NewServer(append(opts, grpc.UnaryInterceptor(count))...)
	testingv1.RegisterNotesServiceServer(gs, notestest.NewService())
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	n.addr = lis.Addr().String()
	return n
}

// toolReplica is a ToolBackendService toolReplica that counts the calls of every
// tool and answers them, or fails them Unavailable when down is set.
type toolReplica struct {
	addr  string
	mu    sync.Mutex
	calls map[string]int
	down  atomic.Bool
}

func serveToolReplica(t *testing.T, tools ...string) *toolReplica {
	t.Helper()
	r := &toolReplica{calls: map[string]int{}}
	handlers := map[string]demotools.HandlerFunc{}
	for _, name := range tools {
		handlers[name] = func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			r.mu.Lock()
			r.calls[name]++
			r.mu.Unlock()
			if r.down.Load() {
				return nil, status.Error(codes.Unavailable, "toolReplica draining")
			}
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ok")}, nil
		}
	}
	r.addr = serveTools(t, handlers)
	return r
}

func (r *toolReplica) count(tool string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[tool]
}

// TestBackendLoadBalancing: a static:/// address list is balanced
// round_robin: both replicas receive calls.
func TestBackendLoadBalancing(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := serveToolReplica(t, "lb.echo"), serveToolReplica(t, "lb.echo")
	target := "static:///" + a.addr + "," + b.addr
	env := gatewaytest.Start(t, gatewaytest.WithTool(plainTool("lb.echo", target, false)))
	// round_robin picks among the addresses that are connected; the second
	// may connect a moment after the first, so call (bounded) until both
	// have served, and check every call went to one of them.
	calls := 0
	for calls < 200 && (a.count("lb.echo") == 0 || b.count("lb.echo") == 0 || calls < 10) {
		if _, err := invoke(ctx, env, "lb.echo"); err != nil {
			t.Fatal(err)
		}
		calls++
	}
	if na, nb := a.count("lb.echo"), b.count("lb.echo"); na == 0 || nb == 0 || na+nb != calls {
		t.Errorf("toolReplica calls %d and %d after %d calls, want both > 0 and every call served (round_robin over the list)", na, nb, calls)
	}
}

// TestBackendRetries: an idempotent tool's call that fails Unavailable is
// retried (with round_robin, on the next replica); any other tool's is
// made exactly once.
func TestBackendRetries(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	down, up := serveToolReplica(t, "retry.idem", "retry.once"), serveToolReplica(t, "retry.idem", "retry.once")
	down.down.Store(true)
	alone := serveToolReplica(t, "retry.alone", "retry.alone.idem")
	alone.down.Store(true)
	pair := "static:///" + down.addr + "," + up.addr
	env := gatewaytest.Start(t,
		// Ejection off: after 5 failures it would pass the down replica
		// over, and this test counts the calls that reach it.
		gatewaytest.WithConfig(func(c *server.Config) { c.BackendEjection.Threshold = 0 }),
		gatewaytest.WithTool(plainTool("retry.idem", pair, true)),
		gatewaytest.WithTool(plainTool("retry.once", pair, false)),
		gatewaytest.WithTool(plainTool("retry.alone", alone.addr, false)),
		gatewaytest.WithTool(plainTool("retry.alone.idem", alone.addr, true)))

	const calls = 6
	for i := range calls {
		if _, err := invoke(ctx, env, "retry.idem"); err != nil {
			t.Fatalf("idempotent call %d with one replica down: %v, want it retried on the other", i, err)
		}
	}
	if n := down.count("retry.idem"); n == 0 {
		t.Errorf("the down toolReplica saw no idempotent call; round_robin should have sent it some (so the retries were not tested)")
	}
	if n := up.count("retry.idem"); n != calls {
		t.Errorf("the up toolReplica answered %d idempotent calls, want all %d", n, calls)
	}

	failed := 0
	for range calls {
		if _, err := invoke(ctx, env, "retry.once"); err != nil {
			wantUnavailableNaming(t, err, "retry.once", "a non-idempotent call to a down toolReplica fails as it is", down.addr)
			failed++
		}
	}
	if total := down.count("retry.once") + up.count("retry.once"); total != calls || failed != down.count("retry.once") || failed == 0 {
		t.Errorf("non-idempotent: %d backend calls for %d gateway calls, %d failed, the down toolReplica saw %d; want each call made exactly once",
			total, calls, failed, down.count("retry.once"))
	}

	_, err := invoke(ctx, env, "retry.alone")
	wantUnavailableNaming(t, err, "retry.alone", "a non-idempotent tool is not retried", alone.addr)
	if n := alone.count("retry.alone"); n != 1 {
		t.Errorf("non-idempotent tool on a down backend called %d times, want exactly 1", n)
	}
	_, err = invoke(ctx, env, "retry.alone.idem")
	wantUnavailableNaming(t, err, "retry.alone.idem", "retries are bounded, then the failure is the caller's", alone.addr)
	if n := alone.count("retry.alone.idem"); n != 3 {
		t.Errorf("idempotent tool on a down backend called %d times, want the bound of 3 attempts", n)
	}
}
