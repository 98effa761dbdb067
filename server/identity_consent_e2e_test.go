package server_test

// The user-consent identity mode end to end (issue 32 item 5): a real
// OpenID provider (internal/oidctest, zitadel/oidc's op) is the upstream's
// authorization server, its login approving the user a test's browser is
// logged in as; the upstream is a go-sdk MCP server behind the SDK's
// bearer middleware, verifying tokens against the provider's JWKS. A
// caller without a token is told where to authorize (gRPC ErrorInfo, MCP
// -32042 or an isError result by revision); the browser runs the flow
// through the gateway's start and callback endpoints; the upstream then
// sees the caller's own subject.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/oidctest"
	"github.com/flowdrop/gateway/internal/redistest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/identity"
)

// consentEnv is a gateway whose id.mcp tool is sent under user-consent.
type consentEnv struct {
	env   *gatewaytest.Env
	prov  *oidctest.Provider
	b     *idBackends
	dir   string
	audit string
	logs  *syncBuffer
	// skew is added to the gateway's user-consent clock (refresh tests).
	skew atomic.Int64
	toks map[string]string // the callers' own bearer tokens at the gateway
}

var idUpstreamApp = oidctest.Client{ID: "upstream-app", Secret: "upstream-app-secret-7d21"}

func startConsent(t *testing.T, store func(*identity.ConsentConfig, *server.Config)) *consentEnv {
	t.Helper()
	c := &consentEnv{dir: t.TempDir(), logs: &syncBuffer{}}
	c.audit = filepath.Join(c.dir, "audit.jsonl")
	mcpLis := gatewaytest.Listen(t)
	base := "http://" + mcpLis.Addr().String()
	app := idUpstreamApp
	app.RedirectURIs = []string{base + identity.CallbackPath}
	login := idGatewayLogin
	login.RedirectURIs = []string{base + identity.VerifyPath}
	c.prov = oidctest.Start(t, oidctest.Options{Clients: []oidctest.Client{idAlice, idBob, app, login}})
	v := &idVerifier{}
	v.set(c.prov.Issuer, c.prov.JWKSURL)
	c.b = startIDBackends(t, v)
	upstreamAud := strings.TrimSuffix(c.b.mcpURL, "/mcp")

	key := make([]byte, 32)
	rand.Read(key)
	keyFile, secretFile := filepath.Join(c.dir, "consent.key"), filepath.Join(c.dir, "client.secret")
	writeFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	writeFile(t, secretFile, idUpstreamApp.Secret)
	k := &identity.ConsentConfig{RedirectURL: base + identity.CallbackPath, KeyFiles: []string{keyFile},
		Clients: []identity.OAuthClient{{Name: "upstream", Issuer: c.prov.Issuer, ClientID: idUpstreamApp.ID, ClientSecretFile: secretFile,
			Scopes: []string{"openid", "offline_access", "aud:" + upstreamAud}}},
		Now: func() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }}
	ui := identity.Config{Tools: []identity.Rule{{Match: "id.mcp", Mode: identity.UserConsent, Client: "upstream"}}, Consent: k}
	cfgs := []func(*server.Config){func(cfg *server.Config) { cfg.Listeners.MCP = mcpLis }}
	if store != nil {
		cfgs = append(cfgs, func(cfg *server.Config) { store(cfg.Policy.UpstreamIdentity.Consent, cfg) })
	} else {
		k.BoltFile = filepath.Join(c.dir, "usertokens.db")
	}
	opts := append(idToolOptions(c.b), gatewaytest.WithLogOutput(c.logs), gatewaytest.WithPolicy(idPolicy(c.prov, c.audit, ui)))
	for _, f := range cfgs {
		opts = append(opts, gatewaytest.WithConfig(f))
	}
	c.env = gatewaytest.Start(t, opts...)
	c.toks = map[string]string{"alice": c.prov.Token(t, idAlice, idGatewayAud), "bob": c.prov.Token(t, idBob, idGatewayAud)}
	return c
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// consentRequired is the authorization URL of a gRPC refusal, failing
// the test unless it is identity-consent-required naming the start endpoint.
func (c *consentEnv) consentRequired(t *testing.T, err error) string {
	t.Helper()
	if status.Code(err) != codes.FailedPrecondition || idReason(err) != "identity-consent-required" {
		t.Fatalf("call: %v; want FailedPrecondition identity-consent-required", err)
	}
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			u := info.GetMetadata()["authorization_url"]
			if !strings.HasPrefix(u, strings.TrimSuffix(c.env.MCPURL, "/mcp")+identity.StartPath+"?s=") || !strings.Contains(status.Convert(err).Message(), u) {
				t.Fatalf("authorization_url %q (message %q): want the gateway's start endpoint, named in the message", u, status.Convert(err).Message())
			}
			return u
		}
	}
	t.Fatal("no ErrorInfo")
	return ""
}

// authorize runs the flow in user's browser from the link and returns the
// callback page's status and text.
func (c *consentEnv) authorize(t *testing.T, browser *http.Client, link string) (int, string) {
	t.Helper()
	resp, err := browser.Get(link)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestIdentityUserConsent: a caller without a token is refused with the
// authorization link (gRPC FailedPrecondition + ErrorInfo); after the
// code flow in its browser the MCP upstream verifies the caller's own
// token; a second caller is still refused until it authorizes, and the
// two calling at once each reach the upstream as themselves; the token is
// refreshed (once, for concurrent calls) when its expiry nears; the bolt
// file holds no token in the clear; revoking ends it; the audit says
// user-consent and the subject, never a token.
func TestIdentityUserConsent(t *testing.T) {
	t.Parallel()
	c := startConsent(t, nil)
	ctx := testCtx(t)
	if !strings.Contains(c.logs.String(), "has no verify_caller") {
		t.Fatal("start-up did not warn that the browser's person is not checked (no verify_caller)")
	}

	_, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a0")
	link := c.consentRequired(t, err)
	if _, _, refused := c.b.received(); refused != 0 || len(c.b.tokens) != 0 {
		t.Fatal("the upstream was called before the caller authorized")
	}

	// Another browser cannot finish alice's flow: the cookie binds it.
	stranger := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if strings.HasPrefix(r.URL.Path, "/login") {
			return http.ErrUseLastResponse // stop at the provider's login
		}
		return nil
	}}
	resp, err := stranger.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	loginURL := resp.Header.Get("Location")
	resp.Body.Close()
	if !strings.Contains(loginURL, "/login?id=") {
		t.Fatalf("start did not lead to the provider's login (Location %q)", loginURL)
	}
	// mallory completes that request at the provider: the callback lands
	// in mallory's browser, which has not the start's cookie.
	if code, text := c.authorize(t, c.prov.Browser(t, "mallory"), c.prov.Issuer+loginURL); code != http.StatusBadRequest || !strings.Contains(text, "another browser") {
		t.Fatalf("callback in another browser: %d %q; want 400 naming the other browser", code, text)
	}

	code, text := c.authorize(t, c.prov.Browser(t, "alice"), link)
	if code != http.StatusOK || !strings.Contains(text, "Authorized") {
		t.Fatalf("alice's authorization: %d %q", code, text)
	}
	if got, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a1"); err != nil || got != "alice" {
		t.Fatalf("alice after authorizing: %q, %v; want the upstream to verify alice", got, err)
	}
	// bob has not authorized: alice's token is never his.
	_, err = idCall(ctx, c.env, c.toks["bob"], "id.mcp", "b0")
	bobLink := c.consentRequired(t, err)
	if bobLink == link {
		t.Fatal("bob was given alice's link")
	}
	if code, text := c.authorize(t, c.prov.Browser(t, "bob"), bobLink); code != http.StatusOK {
		t.Fatalf("bob's authorization: %d %q", code, text)
	}

	concurrent := func(tag string) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for _, who := range []string{"alice", "bob"} {
			for i := range 8 {
				wg.Go(func() {
					got, err := idCall(ctx, c.env, c.toks[who], "id.mcp", fmt.Sprintf("%s-%s-%d", tag, who, i))
					if err != nil || got != who {
						errs <- fmt.Errorf("%s: %s's call reached the upstream as %q (%v)", tag, who, got, err)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	concurrent("c")
	if n := c.prov.Refreshes(); n != 0 {
		t.Fatalf("%d refreshes of fresh tokens", n)
	}

	// Near expiry (the gateway's clock 59m30s on; tokens live 1h, refreshed
	// 1m ahead): each pair refreshes once, concurrent calls sharing it.
	before, _, _ := c.b.received()
	c.skew.Store(int64(59*time.Minute + 30*time.Second))
	concurrent("r")
	if n := c.prov.Refreshes(); n != 2 {
		t.Fatalf("%d refreshes, want one for each of alice and bob", n)
	}
	after, got, refused := c.b.received()
	if refused != 0 {
		t.Fatalf("the upstream refused %d tokens", refused)
	}
	if fresh := after[len(after)-1]; fresh == before[len(before)-1] && fresh == before[0] {
		t.Fatal("the upstream got no new token after the refresh")
	}
	for i, g := range got {
		if g.Subject != "alice" && g.Subject != "bob" {
			t.Fatalf("upstream verified %q at call %d", g.Subject, i)
		}
	}

	// The store on disk: nothing of any token in the clear.
	db, err := os.ReadFile(filepath.Join(c.dir, "usertokens.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range after {
		if bytes.Contains(db, []byte(tok)) || bytes.Contains(db, []byte(tok[:20])) {
			t.Fatal("the bolt file holds a token in the clear")
		}
	}
	if bytes.Contains(db, []byte("eyJ")) {
		t.Fatal("the bolt file holds a JWT in the clear")
	}
	if !bytes.Contains(db, []byte("upstream\x00alice")) {
		t.Fatal("the bolt file has no row for alice (the test reads the wrong file)")
	}

	// Revoked: alice is asked again; bob keeps his.
	// Through the admin API (flowdropctl usertokens): the admin role
	// lists and revokes; a caller with the invoker role may not.
	rc := gatewayv1.NewToolRegistryServiceClient(c.env.Conn)
	invoker := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.toks["alice"])
	if _, err := rc.ListUserTokens(invoker, &gatewayv1.ListUserTokensRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("list as an invoker: %v; want PermissionDenied", err)
	}
	if _, err := rc.RevokeUserTokens(invoker, &gatewayv1.RevokeUserTokensRequest{Subject: "bob"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("revoke as an invoker: %v; want PermissionDenied", err)
	}
	list, err := rc.ListUserTokens(withKeyCtx(ctx, keyAdmin), &gatewayv1.ListUserTokensRequest{})
	if err != nil || len(list.GetTokens()) != 2 || strings.Contains(list.String(), "eyJ") {
		t.Fatalf("list: %v %v; want alice's and bob's pairs, no token", list, err)
	}
	if r, err := rc.RevokeUserTokens(withKeyCtx(ctx, keyAdmin), &gatewayv1.RevokeUserTokensRequest{Subject: "alice", Client: "upstream"}); err != nil || r.GetRevoked() != 1 {
		t.Fatalf("revoke: %v %v", r, err)
	}
	_, err = idCall(ctx, c.env, c.toks["alice"], "id.mcp", "a2")
	c.consentRequired(t, err)
	if got, err := idCall(ctx, c.env, c.toks["bob"], "id.mcp", "b2"); err != nil || got != "bob" {
		t.Fatalf("bob after alice's revocation: %q %v", got, err)
	}

	// Consent withdrawn at the provider: the next refresh is refused and
	// bob is asked to authorize again.
	c.prov.RevokeRefreshTokens("bob")
	c.skew.Store(int64(2*time.Hour + 59*time.Minute + 30*time.Second))
	_, err = idCall(ctx, c.env, c.toks["bob"], "id.mcp", "b3")
	c.consentRequired(t, err)

	for _, l := range idAudit(t, c.audit) {
		if l["identity_mode"] != nil && (l["identity_mode"] != "user-consent" || l["identity_subject"] != l["caller_subject"]) {
			t.Errorf("audit line %v: want identity_mode user-consent and identity_subject the caller", l)
		}
	}
	idNoSecrets(t, c.audit, c.logs, append(after, c.toks["alice"], c.toks["bob"], idUpstreamApp.Secret)...)
}

// TestIdentityUserConsentMCP: the MCP face tells a caller without a token
// where to authorize as its revision allows: 2025-11-25, and 2026-07-28
// when the request declares elicitation.url, get URLElicitationRequired
// (-32042) carrying a URL-mode elicitation; older revisions, and a
// 2026-07-28 caller that cannot open URLs, an isError result naming it.
func TestIdentityUserConsentMCP(t *testing.T) {
	t.Parallel()
	c := startConsent(t, nil)
	cases := []struct {
		name, rev, caps string
		wantElicitation bool
		reason          string
	}{
		{"2025-06-18", "2025-06-18", "", false, "no URL elicitation before 2025-11-25: the model reads the link"},
		{"2025-11-25", "2025-11-25", "", true, "a stateless face knows no 2025-11-25 capabilities: the revision's -32042"},
		{"2026-07-28 url", "2026-07-28", `{"elicitation":{"url":{}}}`, true, "declared elicitation.url"},
		{"2026-07-28 form only", "2026-07-28", `{"elicitation":{"form":{}}}`, false, "cannot open URLs: the model reads the link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Mcp-Protocol-Version": {tc.rev}, "Authorization": {"Bearer " + c.toks["alice"]}}
			params := `{"name":"id.mcp","arguments":{}}`
			if tc.rev >= "2026-07-28" {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", "id.mcp")
				params = `{"name":"id.mcp","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + tc.rev +
					`","io.modelcontextprotocol/clientCapabilities":` + tc.caps + `}}`
			}
			_, raw, _ := mcpPost(t, c.env.MCPURL, h, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`))
			if i := strings.Index(raw, "data: "); i >= 0 {
				raw = raw[i+len("data: "):]
			}
			var reply struct {
				Result *struct {
					IsError bool                    `json:"isError"`
					Content []struct{ Text string } `json:"content"`
					Meta    map[string]any          `json:"_meta"`
				} `json:"result"`
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Elicitations []struct {
							Mode, URL, ElicitationID, Message string
						} `json:"elicitations"`
					} `json:"data"`
				} `json:"error"`
			}
			if err := json.NewDecoder(strings.NewReader(raw)).Decode(&reply); err != nil {
				t.Fatalf("reply %q: %v", raw, err)
			}
			start := strings.TrimSuffix(c.env.MCPURL, "/mcp") + identity.StartPath + "?s="
			if tc.wantElicitation {
				if reply.Error == nil || reply.Error.Code != -32042 || len(reply.Error.Data.Elicitations) != 1 {
					t.Fatalf("reply %s: want -32042 with one elicitation (%s)", raw, tc.reason)
				}
				e := reply.Error.Data.Elicitations[0]
				if e.Mode != "url" || !strings.HasPrefix(e.URL, start) || e.ElicitationID == "" || !strings.Contains(reply.Error.Message, e.URL) {
					t.Fatalf("elicitation %+v: want a url-mode elicitation of the start endpoint (%s)", e, tc.reason)
				}
				return
			}
			if reply.Result == nil || !reply.Result.IsError || len(reply.Result.Content) == 0 {
				t.Fatalf("reply %s: want an isError result (%s)", raw, tc.reason)
			}
			u, _ := reply.Result.Meta["flowdrop/authorization_url"].(string)
			if !strings.HasPrefix(u, start) || !strings.Contains(reply.Result.Content[0].Text, u) || reply.Result.Meta["flowdrop/reason"] != "identity-consent-required" {
				t.Fatalf("result %s: want the link in the text and _meta (%s)", raw, tc.reason)
			}
		})
	}
	// The go-sdk's own client, declaring it opens URLs, on both revisions:
	// the SDK parses -32042 and its URL-mode elicitation.
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		ctx := testCtx(t)
		client := mcp.NewClient(&mcp.Implementation{Name: "flowdrop-test", Version: "v0"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.env.MCPURL, MaxRetries: -1,
			HTTPClient: httpClient(t, http.Header{"Authorization": {"Bearer " + c.toks["alice"]}})}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
		if err != nil {
			t.Fatalf("%s: connect: %v", rev, err)
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "id.mcp", Arguments: map[string]any{}})
		cs.Close()
		var rpc *jsonrpc.Error
		var data struct {
			Elicitations []*mcp.ElicitParams `json:"elicitations"`
		}
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeURLElicitationRequired || json.Unmarshal(rpc.Data, &data) != nil ||
			len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
			!strings.HasPrefix(data.Elicitations[0].URL, strings.TrimSuffix(c.env.MCPURL, "/mcp")+identity.StartPath) {
			t.Fatalf("go-sdk client on %s: %v; want -32042 with the start link as a URL elicitation", rev, err)
		}
	}

	// The link works from the MCP answer as from the gRPC one.
	_, err := idCall(testCtx(t), c.env, c.toks["alice"], "id.mcp", "x")
	link := c.consentRequired(t, err)
	if code, text := c.authorize(t, c.prov.Browser(t, "alice"), link); code != http.StatusOK {
		t.Fatalf("authorize: %d %q", code, text)
	}
	h := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}, "Authorization": {"Bearer " + c.toks["alice"]}}
	_, raw, reply := mcpPost(t, c.env.MCPURL, h, toolsCall("id.mcp", "{}"))
	if reply == nil || reply.Error != nil || reply.Result == nil || reply.Result.IsError || !strings.Contains(raw, `"alice"`) {
		t.Fatalf("after authorizing: %s; want the upstream's answer naming alice", raw)
	}
}

// TestIdentityUserConsentRedis: the fleet store, a real redis-server: the
// caller's token is stored there sealed (no token in the clear); with the
// authorization server down a due refresh keeps the valid token and an
// expired one fails closed; revoking removes it; Redis down fails the call
// closed.
func TestIdentityUserConsentRedis(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	c := startConsent(t, func(k *identity.ConsentConfig, cfg *server.Config) {
		k.Redis = true
		cfg.Redis = server.RedisConfig{Addr: rs.Addr(), Timeout: time.Second}
	})
	ctx := testCtx(t)
	_, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r0")
	link := c.consentRequired(t, err)
	if code, text := c.authorize(t, c.prov.Browser(t, "alice"), link); code != http.StatusOK {
		t.Fatalf("authorize: %d %q", code, text)
	}
	if got, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r1"); err != nil || got != "alice" {
		t.Fatalf("after authorizing: %q %v", got, err)
	}
	// The authorization server down when the refresh is due: the stored
	// token is sent while it is valid, then the call fails closed.
	c.prov.Stop()
	c.skew.Store(int64(59*time.Minute + 30*time.Second))
	if got, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r1b"); err != nil || got != "alice" {
		t.Fatalf("refresh due, authorization server down, token valid: %q %v; want the stored token sent", got, err)
	}
	c.skew.Store(int64(61 * time.Minute))
	if _, err := idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r1c"); status.Code(err) != codes.Unavailable || idReason(err) != "identity-unavailable" {
		t.Fatalf("token expired, authorization server down: %v; want Unavailable identity-unavailable", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	all, err := rdb.HGetAll(ctx, "flowdrop:usertokens:tokens").Result()
	if err != nil || len(all) != 1 {
		t.Fatalf("redis hash: %v %v; want alice's one row", all, err)
	}
	toks, _, _ := c.b.received()
	for f, v := range all {
		if f != "upstream\x00alice" || strings.Contains(v, toks[0]) || strings.Contains(v, "eyJ") {
			t.Fatalf("redis row %q: want alice's row holding no token in the clear", f)
		}
	}
	if n, err := c.env.Gateway.UserConsent().Revoke(ctx, "alice", ""); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	_, err = idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r2")
	c.consentRequired(t, err)

	// Redis down: the call fails closed, Unavailable.
	rs.Stop()
	_, err = idCall(ctx, c.env, c.toks["alice"], "id.mcp", "r3")
	if status.Code(err) != codes.Unavailable || idReason(err) != "identity-unavailable" {
		t.Fatalf("with redis down: %v; want Unavailable identity-unavailable", err)
	}
}
