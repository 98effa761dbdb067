package server_test

// Upstream identity end to end (issue 32): a real OpenID provider
// (internal/oidctest, zitadel/oidc's op) issues the callers' tokens and
// exchanges them; a backend of every kind — ToolBackendService, gRPC
// method, HTTP operation, MCP upstream (the go-sdk's bearer middleware) —
// verifies the token it receives (against the gateway's JWKS, or the
// provider's keys) and answers with the subject it verified.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/grpcimport"
	"github.com/flowdrop/gateway/internal/notestest"
	"github.com/flowdrop/gateway/internal/oidctest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/identity"
)

const idGatewayAud = "flowdrop-gateway"

var (
	idAlice = oidctest.Client{ID: "alice", Secret: "alice-secret", Roles: []string{policy.RoleInvoker}}
	idBob   = oidctest.Client{ID: "bob", Secret: "bob-secret", Roles: []string{policy.RoleInvoker}}
	idCarol = oidctest.Client{ID: "carol", Secret: "carol-secret", Roles: []string{policy.RoleInvoker}}
	idDave  = oidctest.Client{ID: "dave", Secret: "dave-secret", Roles: []string{policy.RoleInvoker}}
	// idGateway is the gateway as the STS's client (token exchange).
	idGateway = oidctest.Client{ID: "flowdrop-gateway", Secret: "gateway-secret-3f9c"}
)

// idVerifier is what a backend trusts: the issuer, the keys (a JWKS URL)
// and its own name as the audience.
type idVerifier struct {
	mu     sync.Mutex
	issuer string
	jwks   string
	// last is the last JWK Set fetched, used while the issuer is down.
	last *jose.JSONWebKeySet
}

func (v *idVerifier) set(issuer, jwksURL string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.issuer, v.jwks = issuer, jwksURL
}

// verified is what a backend learned from a token it verified.
type verified struct {
	Subject string
	Roles   []string
	CallID  string
}

// verify checks tok's signature against the JWKS (fetched per call: keys
// rotate), its issuer, expiry and audience aud.
func (v *idVerifier) verify(tok, aud string) (verified, error) {
	v.mu.Lock()
	issuer, jwksURL := v.issuer, v.jwks
	v.mu.Unlock()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA, jose.RS256})
	if err != nil {
		return verified{}, err
	}
	set, err := v.keys(jwksURL)
	if err != nil {
		return verified{}, err
	}
	var std jwt.Claims
	var extra struct {
		Roles  []string `json:"roles"`
		CallID string   `json:"call_id"`
	}
	if err := parsed.Claims(*set, &std, &extra); err != nil {
		return verified{}, err
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{aud}, Time: time.Now()}, 0); err != nil {
		return verified{}, err
	}
	return verified{Subject: std.Subject, Roles: extra.Roles, CallID: extra.CallID}, nil
}

// keys fetches the JWK Set (keys rotate), or is the last one fetched
// when the issuer does not answer.
func (v *idVerifier) keys(jwksURL string) (*jose.JSONWebKeySet, error) {
	resp, err := http.Get(jwksURL)
	if err != nil {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.last != nil {
			return v.last, nil
		}
		return nil, err
	}
	defer resp.Body.Close()
	set := new(jose.JSONWebKeySet)
	if err := json.NewDecoder(resp.Body).Decode(set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	v.mu.Lock()
	v.last = set
	v.mu.Unlock()
	return set, nil
}

// idBackends are one backend of each kind behind a verifier, and every
// token they received.
type idBackends struct {
	v        *idVerifier
	grpcAddr string
	httpURL  string
	mcpURL   string

	mu       sync.Mutex
	tokens   []string
	verified []verified
	refused  int
}

func (b *idBackends) record(tok string, got verified, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.refused++
		return
	}
	b.tokens = append(b.tokens, tok)
	b.verified = append(b.verified, got)
}

func (b *idBackends) received() (tokens []string, got []verified, refused int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.tokens), slices.Clone(b.verified), b.refused
}

type subjectKey struct{}

// idBackend serves ToolBackendService: its result is the verified subject.
type idBackend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
}

func (idBackend) Invoke(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(ctx.Value(subjectKey{}).(string))}, nil
}

// idNotes serves NotesService.CreateNote: the note's title is the verified subject.
type idNotes struct {
	testingv1.UnimplementedNotesServiceServer
}

func (idNotes) CreateNote(ctx context.Context, _ *testingv1.CreateNoteRequest) (*testingv1.CreateNoteResponse, error) {
	return &testingv1.CreateNoteResponse{Note: &testingv1.Note{Id: "1", Title: ctx.Value(subjectKey{}).(string)}}, nil
}

func startIDBackends(t *testing.T, v *idVerifier) *idBackends {
	t.Helper()
	b := &idBackends{v: v}
	// gRPC: both services behind one interceptor that verifies the
	// "authorization" metadata.
	lis := gatewaytest.Listen(t)
	b.grpcAddr = lis.Addr().String()
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		var tok string
		if a := md.Get("authorization"); len(a) == 1 {
			tok, _ = strings.CutPrefix(a[0], "Bearer ")
		}
		got, err := v.verify(tok, b.grpcAddr)
		b.record(tok, got, err)
		if err != nil {
			return nil, status.Errorf(codes.Unauthenticated, "token refused: %v", err)
		}
		return h(context.WithValue(ctx, subjectKey{}, got.Subject), req)
	}))
	gatewayv1.RegisterToolBackendServiceServer(srv, idBackend{})
	testingv1.RegisterNotesServiceServer(srv, idNotes{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	// HTTP.
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got, err := v.verify(tok, hs.URL)
		b.record(tok, got, err)
		if err != nil {
			http.Error(w, "token refused", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"sub": got.Subject})
	}))
	t.Cleanup(hs.Close)
	b.httpURL = hs.URL

	// MCP: the go-sdk's own bearer middleware, its verifier ours.
	ms := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "whoami", Description: "The verified caller."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
		})
	var mts *httptest.Server
	verifier := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		got, err := v.verify(tok, mts.URL)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: got.Subject, Expiration: time.Now().Add(time.Minute)}, nil
	}
	mcpHandler := auth.RequireBearerToken(verifier, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil))
	mts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Recorded here (the verifier runs for every request of a session).
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.Method == http.MethodPost && bytes.Contains(peekBody(r), []byte(`"tools/call"`)) {
			got, err := v.verify(tok, mts.URL)
			b.record(tok, got, err)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// The gateway's session ends (DELETE) carry no token, which the
		// middleware refuses: end the server's sessions here.
		for ss := range ms.Sessions() {
			ss.Close()
		}
		mts.Close()
	})
	b.mcpURL = mts.URL + "/mcp"
	return b
}

// peekBody reads r's body and puts it back.
func peekBody(r *http.Request) []byte {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// idTools are the four kinds' tools (the gRPC method's is registered by
// importIDNotes once the gateway runs).
var idTools = []string{"id.svc", "id.method.NotesService.CreateNote", "id.http", "id.mcp"}

func idToolOptions(b *idBackends) []gatewaytest.Option {
	object := &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
	return []gatewaytest.Option{
		gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: "id.svc", Backend: b.grpcAddr, InputSchema: object}
		}),
		gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: "id.http", InputSchema: object,
				Spec: &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{BaseURL: b.httpURL, Method: "GET", Path: "/whoami"}}}
		}),
		gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: "id.mcp", InputSchema: object,
				Spec: &registry.BackendSpec{MCPTool: &registry.MCPTool{URL: b.mcpURL, Tool: "whoami"}}}
		}),
	}
}

func importIDNotes(t *testing.T, env *gatewaytest.Env, b *idBackends) {
	t.Helper()
	src, err := grpcimport.FromDescriptorSet(notestest.DescriptorSet())
	if err != nil {
		t.Fatal(err)
	}
	tools, _, err := grpcimport.Tools(src, grpcimport.Options{Target: b.grpcAddr, Prefix: "id.method."})
	if err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, tool := range tools {
		if _, err := rc.RegisterTool(withKeyCtx(testCtx(t), keyAdmin), &gatewayv1.RegisterToolRequest{Tool: tool}); err != nil {
			t.Fatalf("register %s: %v", tool.GetName(), err)
		}
	}
}

// idPolicy authenticates callers by the provider's tokens (and an admin
// key, to register tools), audits to a file, and sends every id.* tool
// under mode.
func idPolicy(p *oidctest.Provider, auditPath string, ui identity.Config) server.PolicyConfig {
	pol := server.DemoPolicy()
	pol.Auth = policy.AuthConfig{Mode: policy.AuthOn,
		APIKeys: []policy.APIKey{{Name: "admin", SHA256: policy.HashAPIKey(keyAdmin), Roles: []string{policy.RoleAdmin}}},
		JWT:     &policy.JWTConfig{Issuer: p.Issuer, Audience: idGatewayAud, JWKSURL: p.JWKSURL, Algorithms: []string{"ES256"}}}
	pol.Audit.Path = auditPath
	pol.UpstreamIdentity = ui
	return pol
}

// idSigningKey writes a new P-256 key as PKCS#8 PEM.
func idSigningKey(t *testing.T, dir, name string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// idCall calls tool as the holder of tok over the gRPC face, with callID;
// the answer is the subject the backend verified.
func idCall(ctx context.Context, env *gatewaytest.Env, tok, tool, callID string) (string, error) {
	args := map[string]*structpb.Value{}
	if strings.HasPrefix(tool, "id.method.") {
		args["title"] = structpb.NewStringValue("x")
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	resp, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: &structpb.Struct{Fields: args}, CallId: callID})
	if err != nil {
		return "", err
	}
	v := resp.GetResult()
	switch {
	case v.GetStructValue().GetFields()["sub"] != nil:
		return v.GetStructValue().GetFields()["sub"].GetStringValue(), nil
	case v.GetStructValue().GetFields()["note"] != nil:
		return v.GetStructValue().GetFields()["note"].GetStructValue().GetFields()["title"].GetStringValue(), nil
	}
	return v.GetStringValue(), nil
}

// idReason is a refusal's ErrorInfo reason, as the pipeline spells it.
func idReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return strings.ToLower(strings.ReplaceAll(info.GetReason(), "_", "-"))
		}
	}
	return ""
}

// idNoSecrets fails when any of secrets appears in the audit file or the
// gateway's log.
func idNoSecrets(t *testing.T, auditPath string, logs *syncBuffer, secrets ...string) {
	t.Helper()
	audit, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(audit, []byte(s)) || strings.Contains(logs.String(), s) {
			t.Errorf("a token or secret is in the audit log or the gateway's log")
		}
	}
}

// idAudit is the audit lines of tool: (identity_mode, identity_subject, decision).
func idAudit(t *testing.T, auditPath string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if tool, _ := m["tool"].(string); strings.HasPrefix(tool, "id.") && m["operation"] == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestIdentityGatewaySigned: under gateway-signed, every kind's backend
// receives a JWT it verifies against the JWKS the admin listener serves,
// naming the caller (sub), the backend (aud), the caller's roles and the
// call id; two callers calling at once each reach every backend as
// themselves; the audit line says gateway-signed and the subject, and no
// token is in the audit log or the gateway's log.
func TestIdentityGatewaySigned(t *testing.T) {
	t.Parallel()
	prov := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{idAlice, idBob}})
	dir := t.TempDir()
	v := &idVerifier{}
	b := startIDBackends(t, v)
	auditPath := filepath.Join(dir, "audit.jsonl")
	ui := identity.Config{Tools: []identity.Rule{{Match: "id.*", Mode: identity.GatewaySigned}},
		Signing: &identity.SigningConfig{Issuer: "https://gateway.flowdrop.test", KeyFiles: []string{idSigningKey(t, dir, "k1.pem")}}}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, append(idToolOptions(b), gatewaytest.WithAdmin(), gatewaytest.WithLogOutput(logs),
		gatewaytest.WithPolicy(idPolicy(prov, auditPath, ui)))...)
	importIDNotes(t, env, b)
	v.set("https://gateway.flowdrop.test", env.AdminURL+"/.well-known/jwks.json")

	toks := map[string]string{"alice": prov.Token(t, idAlice, idGatewayAud), "bob": prov.Token(t, idBob, idGatewayAud)}
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for who, tok := range toks {
		for _, tool := range idTools {
			for i := range 4 {
				wg.Go(func() {
					callID := fmt.Sprintf("%s-%s-%d", who, tool, i)
					got, err := idCall(ctx, env, tok, tool, callID)
					switch {
					case err != nil:
						errs <- fmt.Errorf("%s calling %s: %v", who, tool, err)
					case got != who:
						errs <- fmt.Errorf("%s calling %s: the backend verified %q", who, tool, got)
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tokens, got, refused := b.received()
	if refused != 0 || len(got) != 2*4*len(idTools) {
		t.Fatalf("backends verified %d tokens and refused %d, want %d and none", len(got), refused, 2*4*len(idTools))
	}
	for _, g := range got {
		if !slices.Equal(g.Roles, []string{policy.RoleInvoker}) || !strings.HasPrefix(g.CallID, g.Subject+"-") {
			t.Errorf("a minted token for %s: roles %v, call id %q; want the caller's roles and its call's id", g.Subject, g.Roles, g.CallID)
		}
	}
	lines := idAudit(t, auditPath)
	if len(lines) != 2*4*len(idTools) {
		t.Fatalf("%d audit lines for the id tools, want %d", len(lines), 2*4*len(idTools))
	}
	for _, l := range lines {
		if l["identity_mode"] != "gateway-signed" || l["identity_subject"] != l["caller_subject"] {
			t.Errorf("audit line %v: want identity_mode gateway-signed and identity_subject the caller", l)
		}
	}
	idNoSecrets(t, auditPath, logs, append(tokens, toks["alice"], toks["bob"])...)
}

// TestIdentitySigningKeyRotation: with two keys listed, the first signs
// and both are published; after a reload that lists the new key first,
// tokens are signed with it while the old one stays published (overlap).
func TestIdentitySigningKeyRotation(t *testing.T) {
	t.Parallel()
	prov := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{idAlice}})
	dir := t.TempDir()
	v := &idVerifier{}
	b := startIDBackends(t, v)
	oldKey, newKey := idSigningKey(t, dir, "old.pem"), idSigningKey(t, dir, "new.pem")
	sign := func(keys ...string) identity.Config {
		return identity.Config{Tools: []identity.Rule{{Match: "id.*", Mode: identity.GatewaySigned}},
			Signing: &identity.SigningConfig{Issuer: "https://gateway.flowdrop.test", KeyFiles: keys}}
	}
	pol := idPolicy(prov, filepath.Join(dir, "audit.jsonl"), sign(oldKey, newKey))
	env := gatewaytest.Start(t, append(idToolOptions(b), gatewaytest.WithAdmin(), gatewaytest.WithPolicy(pol))...)
	jwksURL := env.AdminURL + "/.well-known/jwks.json"
	v.set("https://gateway.flowdrop.test", jwksURL)
	tok := prov.Token(t, idAlice, idGatewayAud)
	ctx := testCtx(t)

	kids := func() []string {
		resp, err := http.Get(jwksURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range set.Keys {
			if !k.IsPublic() {
				t.Fatal("the JWKS holds a private key")
			}
			out = append(out, k.KeyID)
		}
		return out
	}
	signedBy := func() string {
		if _, err := idCall(ctx, env, tok, "id.http", "c"); err != nil {
			t.Fatalf("call: %v", err)
		}
		tokens, _, _ := b.received()
		parsed, err := jwt.ParseSigned(tokens[len(tokens)-1], []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatal(err)
		}
		return parsed.Headers[0].KeyID
	}
	before := kids()
	if len(before) != 2 || signedBy() != before[0] {
		t.Fatalf("JWKS %v; want both keys published and the first listed signing", before)
	}
	pol.UpstreamIdentity = sign(newKey, oldKey)
	if err := env.Gateway.ReloadPolicy(pol); err != nil {
		t.Fatalf("reload: %v", err)
	}
	after := kids()
	if !slices.Equal(after, []string{before[1], before[0]}) || signedBy() != before[1] {
		t.Fatalf("after the rotation: JWKS %v, signed by the new key? want the new key signing and the old one still published", after)
	}
}

// TestIdentityPassthrough: the caller's own token reaches every kind's
// backend when its aud names that backend; a token for another audience
// is refused before the call (PermissionDenied, identity-audience), and
// no backend sees it.
func TestIdentityPassthrough(t *testing.T) {
	t.Parallel()
	prov := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{idAlice, idBob, idCarol}})
	dir := t.TempDir()
	v := &idVerifier{}
	b := startIDBackends(t, v)
	v.set(prov.Issuer, prov.JWKSURL)
	auditPath := filepath.Join(dir, "audit.jsonl")
	ui := identity.Config{Tools: []identity.Rule{{Match: "id.*", Mode: identity.Passthrough}}}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, append(idToolOptions(b), gatewaytest.WithLogOutput(logs),
		gatewaytest.WithPolicy(idPolicy(prov, auditPath, ui)))...)
	importIDNotes(t, env, b)
	httpOrigin := b.httpURL
	mcpOrigin := strings.TrimSuffix(b.mcpURL, "/mcp")
	upstreams := []string{b.grpcAddr, httpOrigin, mcpOrigin}
	alice := prov.Token(t, idAlice, append([]string{idGatewayAud}, upstreams...)...)
	bob := prov.Token(t, idBob, append([]string{idGatewayAud}, upstreams...)...)
	carol := prov.Token(t, idCarol, idGatewayAud, "https://elsewhere.example") // not for these upstreams
	ctx := testCtx(t)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for who, tok := range map[string]string{"alice": alice, "bob": bob} {
		for _, tool := range idTools {
			for range 3 {
				wg.Go(func() {
					got, err := idCall(ctx, env, tok, tool, "")
					if err != nil || got != who {
						errs <- fmt.Errorf("%s calling %s: %q, %v; want the backend to verify %s", who, tool, got, err, who)
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tokens, _, _ := b.received()
	for _, tok := range tokens {
		if tok != alice && tok != bob {
			t.Fatal("a backend received a token that is not a caller's own")
		}
	}
	n := len(tokens)
	for _, tool := range idTools {
		_, err := idCall(ctx, env, carol, tool, "")
		if status.Code(err) != codes.PermissionDenied || idReason(err) != "identity-audience" ||
			!strings.Contains(status.Convert(err).Message(), tool) || strings.Contains(err.Error(), b.grpcAddr) || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("carol (a token for another audience) calling %s: %v; want PermissionDenied, reason identity-audience, naming the tool and no address", tool, err)
		}
	}
	if tokens, _, refused := b.received(); len(tokens) != n || refused != 0 {
		t.Errorf("the refused calls reached a backend (%d tokens, %d refused)", len(tokens)-n, refused)
	}
	for _, l := range idAudit(t, auditPath) {
		switch l["caller_subject"] {
		case "carol":
			if l["decision"] != policy.DecisionDeny || l["reason"] != "identity-audience" || l["identity_mode"] != nil {
				t.Errorf("carol's audit line %v: want a deny with reason identity-audience, no identity sent", l)
			}
		default:
			if l["identity_mode"] != "passthrough" || l["identity_subject"] != l["caller_subject"] {
				t.Errorf("audit line %v: want identity_mode passthrough and the caller as subject", l)
			}
		}
	}
	idNoSecrets(t, auditPath, logs, alice, bob, carol)
}

// TestIdentityTokenExchange: the caller's token is exchanged (RFC 8693)
// at the provider for one whose aud is the backend; every kind verifies
// it against the provider's keys; a second call reuses the exchanged
// token; an expired one is exchanged again; with the provider down, a
// caller without a cached token fails closed (Unavailable,
// identity-unavailable, naming the tool, nothing of the STS).
func TestIdentityTokenExchange(t *testing.T) {
	t.Parallel()
	prov := oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{idAlice, idBob, idCarol, idDave, idGateway}})
	dir := t.TempDir()
	v := &idVerifier{}
	b := startIDBackends(t, v)
	v.set(prov.Issuer, prov.JWKSURL)
	secretFile := filepath.Join(dir, "sts-secret")
	if err := os.WriteFile(secretFile, []byte(idGateway.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	ui := identity.Config{Tools: []identity.Rule{{Match: "id.*", Mode: identity.TokenExchange}},
		Exchange: &identity.ExchangeConfig{TokenURL: prov.TokenURL, ClientID: idGateway.ID, ClientSecretFile: secretFile, RefreshBefore: time.Second}}
	logs := &syncBuffer{}
	env := gatewaytest.Start(t, append(idToolOptions(b), gatewaytest.WithLogOutput(logs),
		gatewaytest.WithPolicy(idPolicy(prov, auditPath, ui)))...)
	importIDNotes(t, env, b)
	alice, bob := prov.Token(t, idAlice, idGatewayAud), prov.Token(t, idBob, idGatewayAud)
	carol, dave := prov.Token(t, idCarol, idGatewayAud), prov.Token(t, idDave, idGatewayAud)
	ctx := testCtx(t)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for who, tok := range map[string]string{"alice": alice, "bob": bob} {
		for _, tool := range idTools {
			for range 3 {
				wg.Go(func() {
					got, err := idCall(ctx, env, tok, tool, "")
					if err != nil || got != who {
						errs <- fmt.Errorf("%s calling %s: %q, %v; want the backend to verify %s", who, tool, got, err, who)
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tokens, _, refused := b.received()
	if refused != 0 {
		t.Fatalf("backends refused %d exchanged tokens", refused)
	}
	for _, tok := range tokens {
		if tok == alice || tok == bob {
			t.Fatal("a backend received the caller's own token, not an exchanged one")
		}
	}
	// Exchanged tokens are cached per (subject, audience), and one
	// exchange serves concurrent misses: one exchange per caller and
	// upstream (the two gRPC kinds share a target, so an audience).
	if n := prov.Exchanges(); n != 2*3 {
		t.Errorf("%d exchanges for %d calls of 2 callers to 3 upstreams, want 6", n, len(tokens))
	}

	// Expired: the next call is sent a new token the backend accepts.
	prov.SetExchangeTTL(3 * time.Second)
	if got, err := idCall(ctx, env, carol, "id.http", ""); err != nil || got != "carol" {
		t.Fatalf("carol: %q, %v", got, err)
	}
	tokens, _, _ = b.received()
	first := tokens[len(tokens)-1]
	time.Sleep(3100 * time.Millisecond) // the exchanged token has expired
	before := prov.Exchanges()
	if got, err := idCall(ctx, env, carol, "id.http", ""); err != nil || got != "carol" {
		t.Fatalf("after the exchanged token expired: %q, %v; want it exchanged again and accepted", got, err)
	}
	tokens, _, refused = b.received()
	if tokens[len(tokens)-1] == first || prov.Exchanges() != before+1 || refused != 0 {
		t.Errorf("after expiry the backend got the same token again (or was refused %d times), %d exchanges; want one new exchange", refused, prov.Exchanges()-before)
	}

	// The STS down: a caller whose token is not cached fails closed; one
	// whose token is cached is still served.
	prov.Stop()
	if got, err := idCall(ctx, env, alice, "id.svc", ""); err != nil || got != "alice" {
		t.Errorf("alice (a cached exchange) with the STS down: %q, %v; want served", got, err)
	}
	for _, tool := range idTools {
		_, err := idCall(ctx, env, dave, tool, "")
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || idReason(err) != "identity-unavailable" || !strings.Contains(st.Message(), tool) ||
			strings.Contains(st.Message(), "127.0.0.1") || strings.Contains(st.Message(), dave) {
			t.Errorf("dave calling %s with the STS down: %v; want Unavailable, identity-unavailable, naming the tool and nothing of the STS", tool, err)
		}
	}
	for _, l := range idAudit(t, auditPath) {
		if l["caller_subject"] == "dave" {
			if l["decision"] != policy.DecisionError || l["reason"] != "Unavailable" || l["identity_mode"] != nil {
				t.Errorf("dave's audit line %v: want an error, Unavailable, and no identity sent", l)
			}
			continue
		}
		if l["identity_mode"] != "token-exchange" || l["identity_subject"] != l["caller_subject"] {
			t.Errorf("audit line %v: want identity_mode token-exchange and the caller as subject", l)
		}
	}
	idNoSecrets(t, auditPath, logs, append(tokens, alice, bob, carol, dave, idGateway.Secret)...)
	if t.Failed() {
		t.Log(logs.String())
	}
}
