package grpcapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/pipeline"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

const (
	testInvokerKey = "fd_test_invoker_8c1d0f6a2b"
	testAdminKey   = "fd_test_admin_77e3a9c4d1"
	healthCheck    = "/grpc.health.v1.Health/Check"
)

// callerRecorder is an interceptor after authentication that remembers the
// Caller the auth interceptor put in the context.
type callerRecorder struct {
	mu   sync.Mutex
	last policy.Caller
	ok   bool
}

func (r *callerRecorder) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	c, ok := policy.CallerFrom(ctx)
	r.mu.Lock()
	r.last, r.ok = c, ok
	r.mu.Unlock()
	return h(ctx, req)
}

func (r *callerRecorder) get() (policy.Caller, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.ok
}

// startPolicyServer serves gRPC health over bufconn behind the given
// interceptors and returns a health client; everything is closed at cleanup.
func startPolicyServer(t *testing.T, serverOpts []grpc.ServerOption, dialOpts []grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(serverOpts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	dialOpts = append([]grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	})}, dialOpts...)
	cc, err := grpc.NewClient("passthrough:///bufnet", dialOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		<-done
	})
	return healthpb.NewHealthClient(cc)
}

func policyTestAuth(t *testing.T) *policy.Authenticator {
	t.Helper()
	a, err := policy.NewAuthenticator(t.Context(), policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey(testInvokerKey), Roles: []string{policy.RoleInvoker}},
		{Name: "operator", SHA256: policy.HashAPIKey(testAdminKey), Roles: []string{policy.RoleAdmin}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func errorInfoOf(t *testing.T, st *status.Status) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	t.Fatalf("status %v has no ErrorInfo", st)
	return nil
}

func TestPolicyInterceptorsAuthAndRoles(t *testing.T) {
	t.Parallel()
	az, err := policy.NewAuthorizer(policy.AuthzConfig{MethodRoles: map[string][]string{
		"/grpc.health.v1.Health/*": {policy.RoleInvoker}}})
	if err != nil {
		t.Fatal(err)
	}
	authU, authS := newAuthInterceptor(policyTestAuth(t))
	roleU, roleS := newRoleInterceptor(az)
	rec := &callerRecorder{}
	client := startPolicyServer(t, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(authU, rec.unary, roleU),
		grpc.ChainStreamInterceptor(authS, roleS),
	}, []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())})

	cases := []struct {
		reason     string
		md         []string
		wantCode   codes.Code
		wantReason string
		wantCaller string
	}{
		{reason: "no credentials", wantCode: codes.Unauthenticated, wantReason: "CREDENTIALS_MISSING"},
		{reason: "unknown API key", md: []string{"x-api-key", "fd_test_wrong"}, wantCode: codes.Unauthenticated, wantReason: "API_KEY_UNKNOWN"},
		{reason: "authorization header in another scheme", md: []string{"authorization", "Basic " + testInvokerKey}, wantCode: codes.Unauthenticated, wantReason: "CREDENTIALS_MALFORMED"},
		{reason: "known key without the role", md: []string{"x-api-key", testAdminKey}, wantCode: codes.PermissionDenied, wantReason: "ROLE_MISSING"},
		{reason: "known key with the role", md: []string{"x-api-key", testInvokerKey}, wantCode: codes.OK, wantCaller: "agent"},
		{reason: "API key as a bearer token (no JWT configured)", md: []string{"authorization", "Bearer " + testInvokerKey}, wantCode: codes.OK, wantCaller: "agent"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			ctx := t.Context()
			if len(tc.md) > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, tc.md...)
			}
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			st := status.Convert(err)
			if st.Code() != tc.wantCode {
				t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), tc.wantCode)
			}
			for _, secret := range []string{testInvokerKey, testAdminKey} {
				if strings.Contains(st.Message(), secret) || strings.Contains(st.String(), secret) {
					t.Fatalf("status echoes a credential: %v", st)
				}
			}
			if tc.wantCode == codes.OK {
				c, ok := rec.get()
				if !ok || c.Subject != tc.wantCaller || c.Method != policy.MethodAPIKey {
					t.Fatalf("caller in context = %+v (%v), want %s", c, ok, tc.wantCaller)
				}
				return
			}
			ei := errorInfoOf(t, st)
			if ei.GetReason() != tc.wantReason || ei.GetDomain() != ErrorDomain {
				t.Fatalf("ErrorInfo = %v, want reason %s", ei, tc.wantReason)
			}
		})
	}

	// Streams go through the same checks.
	stream, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("stream without credentials: %v", err)
	}
}

func TestPolicyInterceptorMatcherSkipsHealth(t *testing.T) {
	t.Parallel()
	skipHealth := selector.MatchFunc(func(_ context.Context, m interceptors.CallMeta) bool {
		return m.Service != healthpb.Health_ServiceDesc.ServiceName
	})
	authU, _ := newAuthInterceptor(policyTestAuth(t), withPolicyMatcher(skipHealth))
	client := startPolicyServer(t, []grpc.ServerOption{grpc.ChainUnaryInterceptor(authU)},
		[]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())})
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health without credentials should be exempt: %v", err)
	}
}

func TestPolicyInterceptorRateLimitRetryInfo(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	rl, err := policy.NewRateLimiter(policy.RateLimitConfig{Rate: 0.5, Burst: 1}, policy.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	authU, _ := newAuthInterceptor(policyTestAuth(t))
	client := startPolicyServer(t, []grpc.ServerOption{grpc.ChainUnaryInterceptor(authU, newRateLimitInterceptor(rl))},
		[]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-api-key", testInvokerKey)
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("code = %v, want ResourceExhausted", st.Code())
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 || retry.GetRetryDelay().AsDuration() > 2*time.Second {
		t.Fatalf("RetryInfo = %v, want a delay in (0, 2s]", retry)
	}
	if ei := errorInfoOf(t, st); ei.GetReason() != "RATE_LIMITED" || ei.GetMetadata()["limit"] != "rate" || ei.GetMetadata()["policy_reason"] != policy.ReasonRateLimited {
		t.Fatalf("ErrorInfo = %v", ei)
	}
}

func TestPolicyErrorToStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		in     *policy.Error
		want   codes.Code
		retry  bool
	}{
		{"unauthenticated", &policy.Error{Code: policy.Unauthenticated, Reason: policy.ReasonJWTExpired, Message: "m"}, codes.Unauthenticated, false},
		{"tool denied", &policy.Error{Code: policy.PermissionDenied, Reason: policy.ReasonToolDenied, Tool: "fs.rm", Message: "m"}, codes.PermissionDenied, false},
		{"rule denied", &policy.Error{Code: policy.PermissionDenied, Reason: policy.ReasonRuleDenied, Rule: "no-chain", Message: "m"}, codes.PermissionDenied, false},
		{"size limit", &policy.Error{Code: policy.InvalidArgument, Reason: policy.ReasonLimitDepth, Limit: "max_depth", Message: "m"}, codes.InvalidArgument, false},
		{"in flight", &policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonLimitInFlight, Limit: "max_in_flight_per_tool", Message: "m"}, codes.ResourceExhausted, false},
		{"rate limited", &policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonRateLimited, RetryAfter: 1500 * time.Millisecond, Message: "m"}, codes.ResourceExhausted, true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			st := Status(pipeline.Classify(tc.in))
			if st.Code() != tc.want || st.Message() != tc.in.Message {
				t.Fatalf("status = %v", st)
			}
			ei := errorInfoOf(t, st)
			if ei.GetMetadata()["policy_reason"] != tc.in.Reason || ei.GetMetadata()["tool"] != tc.in.Tool ||
				ei.GetMetadata()["rule"] != tc.in.Rule || ei.GetMetadata()["limit"] != tc.in.Limit {
				t.Fatalf("ErrorInfo metadata = %v", ei.GetMetadata())
			}
			hasRetry := false
			for _, d := range st.Details() {
				if r, ok := d.(*errdetails.RetryInfo); ok {
					hasRetry = r.GetRetryDelay().AsDuration() == tc.in.RetryAfter
				}
			}
			if hasRetry != tc.retry {
				t.Fatalf("RetryInfo present = %v, want %v", hasRetry, tc.retry)
			}
		})
	}
}

// TestPolicyInterceptorMTLS runs a real TLS handshake (over bufconn) with a
// CA, server and client certificates generated for the test; the caller is
// the client certificate's CN from the VERIFIED chain.
func TestPolicyInterceptorMTLS(t *testing.T) {
	t.Parallel()
	ca, caKey := newTestCert(t, "test-ca", nil, nil, true)
	srvCert, srvKey := newTestCert(t, "bufnet", ca, caKey, false)
	cliCert, cliKey := newTestCert(t, "svc-agent", ca, caKey, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca)

	a, err := policy.NewAuthenticator(t.Context(), policy.AuthConfig{Mode: policy.AuthOn,
		MTLS: &policy.MTLSConfig{SubjectFrom: "cn", Roles: map[string][]string{"svc-agent": {policy.RoleInvoker}}}})
	if err != nil {
		t.Fatal(err)
	}
	authU, _ := newAuthInterceptor(a)
	rec := &callerRecorder{}
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS13,
	}
	clientTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey}},
		RootCAs:      pool, ServerName: "bufnet", MinVersion: tls.VersionTLS13,
	}
	client := startPolicyServer(t,
		[]grpc.ServerOption{grpc.Creds(credentials.NewTLS(serverTLS)), grpc.ChainUnaryInterceptor(authU, rec.unary)},
		[]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))})
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	c, ok := rec.get()
	if !ok || c.Subject != "svc-agent" || c.Method != policy.MethodMTLS || !c.HasRole(policy.RoleInvoker) {
		t.Fatalf("caller = %+v", c)
	}
}

func newTestCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{cn},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestPolicyInterceptorMTLSUnverifiedCertIsNoIdentity: with a TLS config that
// accepts any client certificate without verifying it, the certificate must
// not identify the caller.
func TestPolicyInterceptorMTLSUnverifiedCertIsNoIdentity(t *testing.T) {
	t.Parallel()
	ca, caKey := newTestCert(t, "test-ca", nil, nil, true)
	srvCert, srvKey := newTestCert(t, "bufnet", ca, caKey, false)
	rogueCA, rogueKey := newTestCert(t, "rogue-ca", nil, nil, true)
	cliCert, cliKey := newTestCert(t, "svc-agent", rogueCA, rogueKey, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	a, err := policy.NewAuthenticator(t.Context(), policy.AuthConfig{Mode: policy.AuthOn,
		MTLS: &policy.MTLSConfig{SubjectFrom: "cn", Roles: map[string][]string{"svc-agent": {policy.RoleInvoker}}}})
	if err != nil {
		t.Fatal(err)
	}
	authU, _ := newAuthInterceptor(a)
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAnyClientCert, MinVersion: tls.VersionTLS13,
	}
	clientTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey}},
		RootCAs:      pool, ServerName: "bufnet", MinVersion: tls.VersionTLS13,
	}
	client := startPolicyServer(t,
		[]grpc.ServerOption{grpc.Creds(credentials.NewTLS(serverTLS)), grpc.ChainUnaryInterceptor(authU)},
		[]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))})
	_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{})
	st := status.Convert(err)
	if st.Code() != codes.Unauthenticated || errorInfoOf(t, st).GetReason() != "CREDENTIALS_MISSING" {
		t.Fatalf("unverified client certificate: %v", st)
	}
}
