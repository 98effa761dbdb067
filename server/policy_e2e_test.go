package server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Test credentials. Only their hashes go into the policy; the tests grep
// the audit log for the clear values.
const (
	keyInvoker = "fd_e2e_invoker_5b0c2d9e"
	keyAdmin   = "fd_e2e_admin_a71f03c8"
	keyLimited = "fd_e2e_limited_c4e8b172"
	jwtIssuer  = "https://issuer.flowdrop.test"
	jwtAud     = "flowdrop-gateway"
)

// jwtSigner mints RS256 tokens with a key generated at test time and
// serves its public half as a JWKS file.
type jwtSigner struct {
	key      *rsa.PrivateKey
	jwksPath string
}

func newJWTSigner(t *testing.T) *jwtSigner {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks := map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "kid": "e2e", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}}
	b, _ := json.Marshal(jwks)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &jwtSigner{key: key, jwksPath: path}
}

func (s *jwtSigner) token(t *testing.T, aud string, exp time.Time, roles ...string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": jwtIssuer, "aud": aud, "sub": "agent-jwt", "exp": exp.Unix(), "iat": time.Now().Add(-time.Minute).Unix(),
		"roles": roles,
	})
	tok.Header["kid"] = "e2e"
	signed, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// testPolicy is an authenticated policy: three API keys and a JWT issuer;
// the "limited" caller may call create_note and run_* but run_* is denied
// (deny wins); a CEL rule refuses chained shell commands.
func testPolicy(s *jwtSigner) server.PolicyConfig {
	p := server.DemoPolicy()
	p.Admin.ListenAddr = ""
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn,
		APIKeys: []policy.APIKey{
			{Name: "invoker", SHA256: policy.HashAPIKey(keyInvoker), Roles: []string{policy.RoleInvoker}},
			{Name: "admin", SHA256: policy.HashAPIKey(keyAdmin), Roles: []string{policy.RoleAdmin}},
			{Name: "limited", SHA256: policy.HashAPIKey(keyLimited), Roles: []string{policy.RoleInvoker}},
		},
	}
	if s != nil {
		p.Auth.JWT = &policy.JWTConfig{Issuer: jwtIssuer, Audience: jwtAud, JWKSFile: s.jwksPath}
	}
	p.Authz = policy.AuthzConfig{
		Default: policy.ToolAccess{Allow: []string{"*"}},
		Callers: map[string]policy.ToolAccess{"limited": {Allow: []string{"create_note", "run_*"}, Deny: []string{"run_*"}}},
	}
	p.Rules = []policy.Rule{{Name: "no-shell-chaining", Tools: []string{"run_command"}, Expr: `!args.command.contains("&&")`}}
	p.Limits = policy.Limits{MaxArgumentBytes: 2048, MaxStringLength: 256, MaxDepth: 6}
	return p
}

func withKey(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "x-api-key", key)
}

func withBearer(tok string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// policyReason returns the ErrorInfo reason and its policy_reason metadata.
func policyReason(err error) (string, string) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason(), info.GetMetadata()["policy_reason"]
		}
	}
	return "", ""
}

func manyTags(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = "tag"
	}
	return out
}

func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = map[string]any{"k": v}
	}
	return v
}

// TestPolicyDenyPaths: every refusal over real gRPC, with its exact code
// and ErrorInfo reason, and the allow paths.
func TestPolicyDenyPaths(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(signer)))
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	future := time.Now().Add(time.Hour)
	deep, _ := json.Marshal(nested(8))

	cases := []struct {
		name, reason string
		ctx          context.Context
		tool         string
		args         map[string]any
		code         codes.Code
		policyReason string // "" for the allow path
	}{
		{name: "no-credentials", reason: "a call without any credential is Unauthenticated",
			ctx: context.Background(), tool: "create_note", args: map[string]any{"title": "x"}, code: codes.Unauthenticated, policyReason: policy.ReasonCredentialsMissing},
		{name: "unknown-key", reason: "a key whose hash is not configured is refused",
			ctx: withKey("fd_not_a_key"), tool: "create_note", args: map[string]any{"title": "x"}, code: codes.Unauthenticated, policyReason: policy.ReasonAPIKeyUnknown},
		{name: "expired-jwt", reason: "exp in the past is refused",
			ctx: withBearer(signer.token(t, jwtAud, time.Now().Add(-time.Hour), policy.RoleInvoker)), tool: "create_note", args: map[string]any{"title": "x"}, code: codes.Unauthenticated, policyReason: policy.ReasonJWTExpired},
		{name: "wrong-audience", reason: "a token for another service is refused",
			ctx: withBearer(signer.token(t, "other-service", future, policy.RoleInvoker)), tool: "create_note", args: map[string]any{"title": "x"}, code: codes.Unauthenticated, policyReason: policy.ReasonJWTAudience},
		{name: "admin-invokes", reason: "admin does not imply invoker: an admin-only caller may not invoke tools",
			ctx: withKey(keyAdmin), tool: "create_note", args: map[string]any{"title": "x"}, code: codes.PermissionDenied, policyReason: policy.ReasonRoleMissing},
		{name: "tool-not-allowed", reason: "a tool outside the caller's allow list is refused, naming the tool",
			ctx: withKey(keyLimited), tool: "apply_ops", args: map[string]any{"ops": []any{}}, code: codes.PermissionDenied, policyReason: policy.ReasonToolNotAllowed},
		{name: "deny-beats-allow", reason: "run_command matches both lists; deny wins",
			ctx: withKey(keyLimited), tool: "run_command", args: map[string]any{"command": "ls"}, code: codes.PermissionDenied, policyReason: policy.ReasonToolDenied},
		{name: "cel-rule", reason: "the rule refuses a chained command",
			ctx: withKey(keyInvoker), tool: "run_command", args: map[string]any{"command": "ls && rm -rf /"}, code: codes.PermissionDenied, policyReason: policy.ReasonRuleDenied},
		{name: "argument-size", reason: "arguments over max_argument_bytes are refused before normalization",
			ctx: withKey(keyInvoker), tool: "create_note", args: map[string]any{"title": "x", "tags": manyTags(600)}, code: codes.InvalidArgument, policyReason: policy.ReasonLimitArgumentSize},
		{name: "string-length", reason: "a string over max_string_length is refused",
			ctx: withKey(keyInvoker), tool: "create_note", args: map[string]any{"title": strings.Repeat("t", 300)}, code: codes.InvalidArgument, policyReason: policy.ReasonLimitStringLength},
		{name: "depth", reason: "arguments nested deeper than max_depth are refused",
			ctx: withKey(keyInvoker), tool: "update_settings", args: map[string]any{"settings": nested(8)}, code: codes.InvalidArgument, policyReason: policy.ReasonLimitDepth},
		{name: "depth-after-decoding", reason: "a JSON string is shallow as sent but deep once normalization decodes it: the limits run again on the normalized arguments",
			ctx: withKey(keyInvoker), tool: "update_settings", args: map[string]any{"settings": string(deep)}, code: codes.InvalidArgument, policyReason: policy.ReasonLimitDepth},
		{name: "allow-api-key", reason: "an invoker key with valid arguments is served",
			ctx: withKey(keyInvoker), tool: "create_note", args: map[string]any{"title": "ok"}, code: codes.OK},
		{name: "allow-jwt", reason: "a valid token with the invoker role is served",
			ctx: withBearer(signer.token(t, jwtAud, future, policy.RoleInvoker)), tool: "create_note", args: map[string]any{"title": "ok"}, code: codes.OK},
		{name: "allow-limited", reason: "the limited caller may call what its allow list names",
			ctx: withKey(keyLimited), tool: "create_note", args: map[string]any{"title": "ok"}, code: codes.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Client.InvokeTool(tc.ctx, &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: gatewaytest.Args(t, tc.args)})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v (%s)", got, err, tc.code, tc.reason)
			}
			if tc.code == codes.OK {
				return
			}
			info, pr := policyReason(err)
			if pr != tc.policyReason || info != strings.ToUpper(strings.ReplaceAll(tc.policyReason, "-", "_")) {
				t.Errorf("ErrorInfo reason %q, policy_reason %q, want %q (%s)", info, pr, tc.policyReason, tc.reason)
			}
			msg := status.Convert(err).Message()
			if (tc.policyReason == policy.ReasonToolNotAllowed || tc.policyReason == policy.ReasonToolDenied) && !strings.Contains(msg, tc.tool) {
				t.Errorf("message %q does not name the tool %q", msg, tc.tool)
			}
			for _, secret := range []string{keyInvoker, keyAdmin, keyLimited, "fd_not_a_key"} {
				if strings.Contains(msg, secret) {
					t.Errorf("message %q echoes a credential", msg)
				}
			}
		})
	}

	t.Run("invoker-registers", func(t *testing.T) {
		// reason: RegisterTool needs the admin role; an invoker is refused.
		_, err := reg.RegisterTool(withKey(keyInvoker), &gatewayv1.RegisterToolRequest{})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("RegisterTool as invoker: %v, want PermissionDenied", err)
		}
		if _, pr := policyReason(err); pr != policy.ReasonRoleMissing {
			t.Errorf("policy_reason %q, want %q", pr, policy.ReasonRoleMissing)
		}
	})
	t.Run("watch-needs-credentials", func(t *testing.T) {
		// reason: the streaming method is authenticated too.
		stream, err := reg.WatchTools(context.Background(), &gatewayv1.WatchToolsRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("WatchTools without credentials: %v, want Unauthenticated", err)
		}
	})
}

// TestPolicyBypassIsDenied: the HTML-escaped form of a chained command
// would pass the rule as sent; normalization decodes it first, so the rule
// sees "&&" and refuses, and the backend is never called.
func TestPolicyBypassIsDenied(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)))
	args := gatewaytest.Args(t, map[string]any{"command": "ls &amp;&amp; rm -rf /"})
	_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "run_command", Arguments: args})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("escaped chained command: %v, want PermissionDenied", err)
	}
	if _, pr := policyReason(err); pr != policy.ReasonRuleDenied {
		t.Errorf("policy_reason %q, want %q", pr, policy.ReasonRuleDenied)
	}
	if n := len(env.Backend.CallsFor("run_command")); n != 0 {
		t.Fatalf("the backend was called %d times", n)
	}
	// The control: a harmless command reaches the backend.
	if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "run_command",
		Arguments: gatewaytest.Args(t, map[string]any{"command": "ls &amp; pwd"})}); err != nil {
		t.Fatal(err)
	}
	calls := env.Backend.CallsFor("run_command")
	if len(calls) != 1 || calls[0].Request.GetArguments().GetFields()["command"].GetStringValue() != "ls & pwd" {
		t.Fatalf("backend calls %v", calls)
	}
}

// TestPolicyRateLimit: a caller × tool bucket of one token refuses the
// second call with ResourceExhausted and a RetryInfo; another tool and
// another caller have their own buckets.
func TestPolicyRateLimit(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	p.RateLimit = policy.RateLimitConfig{Rate: 0.001, Burst: 1}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	call := func(key, tool string, args map[string]any) error {
		_, err := env.Client.InvokeTool(withKey(key), &gatewayv1.InvokeToolRequest{Tool: tool, Arguments: gatewaytest.Args(t, args)})
		return err
	}
	note := map[string]any{"title": "x"}
	if err := call(keyInvoker, "create_note", note); err != nil {
		t.Fatal(err)
	}
	err := call(keyInvoker, "create_note", note)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second call: %v, want ResourceExhausted", err)
	}
	if _, pr := policyReason(err); pr != policy.ReasonRateLimited {
		t.Errorf("policy_reason %q", pr)
	}
	var retry *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
		t.Fatalf("RetryInfo = %v, want a positive delay", retry)
	}
	if err := call(keyInvoker, "run_command", map[string]any{"command": "ls"}); err != nil {
		t.Errorf("another tool: %v (buckets are per caller × tool)", err)
	}
	if err := call(keyLimited, "create_note", note); err != nil {
		t.Errorf("another caller: %v (buckets are per caller × tool)", err)
	}
}

// TestPolicyInFlightLimit: with one call in flight per tool, a second
// concurrent call to that tool is refused at once, another tool is not.
func TestPolicyInFlightLimit(t *testing.T) {
	t.Parallel()
	p := testPolicy(nil)
	p.Limits.MaxInFlightPerTool = 1
	entered, release := make(chan struct{}), make(chan struct{})
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p),
		gatewaytest.WithTool(gatewaytest.ObjectTool("slow")),
		gatewaytest.WithBackendHandler("slow", func(ctx context.Context, _ *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &gatewayv1.InvokeResponse{Result: structpb.NewNullValue()}, nil
		}))
	first := make(chan error, 1)
	go func() {
		_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "slow"})
		first <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call never reached the backend")
	}
	_, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "slow"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("concurrent call: %v, want ResourceExhausted", err)
	}
	if _, pr := policyReason(err); pr != policy.ReasonLimitInFlight {
		t.Errorf("policy_reason %q", pr)
	}
	if !strings.Contains(status.Convert(err).Message(), "max_in_flight_per_tool") {
		t.Errorf("message %q does not name the limit", status.Convert(err).Message())
	}
	if _, err := env.Client.InvokeTool(withKey(keyInvoker), &gatewayv1.InvokeToolRequest{Tool: "create_note",
		Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})}); err != nil {
		t.Errorf("another tool: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first call: %v", err)
	}
}

// TestPolicyRegistryShowsOnlyInvocableTools: ListTools, GetTool and
// WatchTools are filtered by the caller's tool lists; a hidden tool is
// NotFound exactly like one that does not exist.
func TestPolicyRegistryShowsOnlyInvocableTools(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)))
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	names := func(key string) []string {
		resp, err := reg.ListTools(withKey(key), &gatewayv1.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range resp.GetTools() {
			out = append(out, tl.GetName())
		}
		return out
	}
	if got := strings.Join(names(keyLimited), ","); got != "create_note" {
		t.Errorf("limited caller lists %q, want only create_note", got)
	}
	all := names(keyInvoker)
	if len(all) != 4 {
		t.Errorf("invoker lists %d tools, want all 4 demo tools", len(all))
	}

	// GetTool: the visible tool is there; a hidden one answers as a missing one does.
	note, err := reg.GetTool(withKey(keyLimited), &gatewayv1.GetToolRequest{Name: "create_note"})
	if err != nil {
		t.Fatalf("limited GetTool(create_note): %v", err)
	}
	hidden := ""
	for _, n := range all {
		if n != "create_note" {
			hidden = n
		}
	}
	_, errHidden := reg.GetTool(withKey(keyLimited), &gatewayv1.GetToolRequest{Name: hidden})
	_, errMissing := reg.GetTool(withKey(keyLimited), &gatewayv1.GetToolRequest{Name: "no_such_tool"})
	if status.Code(errHidden) != codes.NotFound {
		t.Fatalf("limited GetTool(%s) = %v, want NotFound", hidden, errHidden)
	}
	if got, want := status.Convert(errHidden).Message(), strings.ReplaceAll(status.Convert(errMissing).Message(), "no_such_tool", hidden); got != want {
		t.Errorf("hidden tool's message %q differs from a missing tool's %q: it tells the tool exists", got, want)
	}
	if _, err := reg.GetTool(withKey(keyInvoker), &gatewayv1.GetToolRequest{Name: hidden}); err != nil {
		t.Errorf("invoker GetTool(%s): %v", hidden, err)
	}

	// WatchTools: the replay from 0 and the live events skip hidden tools.
	watch := func(key string) (func() string, func()) {
		ctx, cancel := context.WithTimeout(withKey(key), 20*time.Second)
		stream, err := reg.WatchTools(ctx, &gatewayv1.WatchToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		next := func() string {
			ev, err := stream.Recv()
			if err != nil {
				t.Fatalf("watch (%s…): %v", key[:10], err)
			}
			return ev.GetType().String() + " " + ev.GetTool().GetName()
		}
		return next, cancel
	}
	limited, stopLimited := watch(keyLimited)
	defer stopLimited()
	invoker, stopInvoker := watch(keyInvoker)
	defer stopInvoker()
	if got := limited(); got != "EVENT_TYPE_PUT create_note" {
		t.Errorf("limited watch replay starts with %q, want only create_note", got)
	}
	for range all {
		invoker()
	}
	// A tool the limited caller may not call, then a change it may see.
	secret := proto.Clone(note.GetTool()).(*gatewayv1.Tool)
	// Invokers read no backend targets: the admin gives it.
	secret.Name, secret.Revision, secret.Backend = "secret_report", 0, env.BackendAddr
	if _, err := reg.RegisterTool(withKey(keyAdmin), &gatewayv1.RegisterToolRequest{Tool: secret}); err != nil {
		t.Fatal(err)
	}
	update := proto.Clone(note.GetTool()).(*gatewayv1.Tool)
	update.Description, update.Revision, update.Backend = "Create a note (updated).", 0, env.BackendAddr
	if _, err := reg.RegisterTool(withKey(keyAdmin), &gatewayv1.RegisterToolRequest{Tool: update}); err != nil {
		t.Fatal(err)
	}
	if got := limited(); got != "EVENT_TYPE_PUT create_note" {
		t.Errorf("limited watch's next event is %q, want the create_note update (secret_report hidden)", got)
	}
	if got := invoker(); got != "EVENT_TYPE_PUT secret_report" {
		t.Errorf("invoker watch's next event is %q, want secret_report", got)
	}
}

// TestPolicyAuthOffWarns: authentication off is explicit and logged.
func TestPolicyAuthOffWarns(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	gatewaytest.Start(t, gatewaytest.WithLogOutput(&logs))
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "authentication is off") {
		t.Fatalf("start-up logs lack the warning:\n%s", logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sensitiveTool has values marked sensitive in each supported way, nested
// in an object and in array items.
func sensitiveTool(backend string) registry.Tool {
	schema, _ := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title":    map[string]any{"type": "string"},
			"password": map[string]any{"type": "string", "format": "password"},
			"token":    map[string]any{"type": "string", "writeOnly": true},
			"profile": map[string]any{"type": "object", "properties": map[string]any{
				"name":   map[string]any{"type": "string"},
				"secret": map[string]any{"type": "string", "x-sensitive": true},
			}},
			"keys":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "x-sensitive": true}},
			"count": map[string]any{"type": "integer"},
		},
	})
	return registry.Tool{Name: "signup", Backend: backend, InputSchema: schema}
}

// auditLines reads the audit file after the gateway shut down (which
// flushes it) and parses every line.
func auditLines(t *testing.T, env *gatewaytest.Env, path string) ([]map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	env.Gateway.Close(ctx)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out, string(raw)
}

// TestPolicyAuditLog: one JSON line per call — allowed with repairs,
// validation failure, policy denial, authentication failure, backend error —
// with sensitive values redacted both as sent and as repaired, and no
// credential anywhere in the file.
func TestPolicyAuditLog(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	p := testPolicy(signer)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: path}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p),
		gatewaytest.WithTool(sensitiveTool),
		gatewaytest.WithBackendHandler("signup", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewBoolValue(true)}, nil
		}),
		gatewaytest.WithTool(gatewaytest.ObjectTool("broken")),
		gatewaytest.WithBackendHandler("broken", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return nil, status.Error(codes.FailedPrecondition, "backend says no")
		}))
	tok := signer.token(t, jwtAud, time.Now().Add(time.Hour), policy.RoleInvoker)
	invoke := func(ctx context.Context, id, tool string, args map[string]any) {
		env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: tool, CallId: id, Arguments: gatewaytest.Args(t, args)})
	}
	// Sensitive values travel escaped/encoded so they are repaired too.
	invoke(withBearer(tok), "c-allow", "signup", map[string]any{
		"title": "Ember &amp;amp; Oak", "password": "hunter2&amp;x", "token": "tok-SECRET-1",
		"profile": `{"name":"Ada","secret":"prof-SECRET-2"}`, "keys": []any{"key-SECRET-3", "key-SECRET-4"}, "count": 1,
	})
	invoke(withKey(keyInvoker), "c-invalid", "signup", map[string]any{"password": "pw-SECRET-5", "count": "many"})
	invoke(withKey(keyInvoker), "c-rule", "run_command", map[string]any{"command": "ls &amp;&amp; rm -rf /"})
	invoke(withKey("fd_unknown_key_0000"), "c-unauth", "create_note", map[string]any{"title": "x"})
	invoke(withKey(keyInvoker), "c-backend", "broken", map[string]any{"a": 1})

	lines, raw := auditLines(t, env, path)
	byID := map[string]map[string]any{}
	for _, l := range lines {
		id := fmt.Sprint(l["call_id"])
		if l["call_id"] == nil && l["operation"] == "InvokeTool" {
			// Refused on its headers: the gateway never read the call id.
			id = "refused-on-headers"
		}
		byID[id] = l
	}
	if len(lines) != 5 || len(byID) != 5 {
		t.Fatalf("%d audit lines (%d call ids), want 5:\n%s", len(lines), len(byID), raw)
	}
	for _, secret := range []string{"hunter2", "SECRET", "pw-", keyInvoker, "fd_unknown_key_0000", tok, "authorization", "x-api-key", "Bearer"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the audit log contains %q:\n%s", secret, raw)
		}
	}
	cases := []struct {
		id, reason string
		want       map[string]any
	}{
		{"c-allow", "an allowed call with repairs, authenticated by JWT", map[string]any{
			"decision": "allow", "caller_subject": "agent-jwt", "caller_method": "jwt", "validation": "ok", "backend_code": "OK", "tool": "signup"}},
		{"c-invalid", "a validation failure is a deny with the violations", map[string]any{
			"decision": "deny", "reason": "validation-failed", "validation": "failed", "caller_subject": "invoker", "caller_method": "api-key"}},
		{"c-rule", "a CEL refusal after normalization", map[string]any{
			"decision": "deny", "reason": policy.ReasonRuleDenied, "validation": "ok"}},
		{"refused-on-headers", "an authentication failure is audited without a caller, and without the tool and call id: it is refused on its headers, before its request is read", map[string]any{
			"decision": "deny", "reason": policy.ReasonAPIKeyUnknown, "caller_subject": "", "operation": "InvokeTool", "tool": ""}},
		{"c-backend", "a backend failure records the backend's code", map[string]any{
			"decision": "error", "backend_code": "FailedPrecondition", "validation": "ok"}},
	}
	for _, tc := range cases {
		l := byID[tc.id]
		for k, v := range tc.want {
			if got := l[k]; fmt.Sprint(got) != fmt.Sprint(v) && !(v == "" && got == nil) {
				t.Errorf("%s: %s = %v, want %v (%s)", tc.id, k, got, v, tc.reason)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"])); err != nil {
			t.Errorf("%s: time %v is not RFC 3339: %v", tc.id, l["time"], err)
		}
		if _, ok := l["latency_ms"].(float64); !ok {
			t.Errorf("%s: latency_ms missing", tc.id)
		}
	}

	allow := byID["c-allow"]
	if reps, _ := allow["repairs"].([]any); len(reps) != 3 {
		t.Errorf("c-allow repairs = %v, want title, password (entities) and profile (json)", allow["repairs"])
	}
	sent, _ := allow["args_sent"].(map[string]any)
	rep, _ := allow["args_repaired"].(map[string]any)
	if sent["title"] != "Ember &amp;amp; Oak" || rep["title"] != "Ember & Oak" {
		t.Errorf("non-sensitive title: sent %v, repaired %v; both forms must be kept", sent["title"], rep["title"])
	}
	for name, m := range map[string]map[string]any{"args_sent": sent, "args_repaired": rep} {
		for _, k := range []string{"password", "token"} {
			if m[k] != policy.Redacted {
				t.Errorf("%s.%s = %v, want redacted", name, k, m[k])
			}
		}
		if fmt.Sprint(m["keys"]) != fmt.Sprint([]any{policy.Redacted, policy.Redacted}) {
			t.Errorf("%s.keys = %v, want each item redacted", name, m["keys"])
		}
		if m["count"] != float64(1) {
			t.Errorf("%s.count = %v, want kept", name, m["count"])
		}
	}
	// As sent, profile was a JSON string holding a sensitive field: redacted
	// whole. As repaired it is an object: only the secret is redacted.
	if sent["profile"] != policy.Redacted {
		t.Errorf("args_sent.profile = %v, want redacted whole", sent["profile"])
	}
	if prof, _ := rep["profile"].(map[string]any); prof["secret"] != policy.Redacted || prof["name"] != "Ada" {
		t.Errorf("args_repaired.profile = %v, want secret redacted, name kept", rep["profile"])
	}
	if v, _ := byID["c-invalid"]["violations"].([]any); len(v) == 0 {
		t.Errorf("c-invalid has no violations")
	}
}
