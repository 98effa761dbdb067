package server_test

// MCP authorization discovery (issue 15 item 4): with JWT authentication on,
// the MCP listener serves OAuth 2.0 Protected Resource Metadata (RFC 9728)
// and every 401 names it in WWW-Authenticate. Real HTTP on 127.0.0.1; the
// go-sdk's own discovery (oauthex) reads the challenge and the document.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// mcpChallenge POSTs an initialize to url with header and returns the
// status and the Bearer challenge's parameters.
func mcpChallenge(t *testing.T, hc *http.Client, mcpURL, authorization string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, mcpURL,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("WWW-Authenticate %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return resp.StatusCode, c.Params
		}
	}
	return resp.StatusCode, nil
}

// getDocument GETs url and returns the status and the JSON object, if any.
func getDocument(t *testing.T, hc *http.Client, u string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("GET %s: not JSON: %v: %s", u, err, body)
	}
	return resp.StatusCode, doc
}

func TestMCPAuthorizationDiscoveryDefaults(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(testPolicy(signer)))
	hc := httpClient(t, nil)
	base := strings.TrimSuffix(env.MCPURL, mcpapi.Path)
	wantMetadataURL := base + mcpapi.ResourceMetadataPath + mcpapi.Path

	for _, tc := range []struct {
		authorization string
		reason        string
	}{
		{"", "no credentials: the challenge says where to find the authorization server"},
		{"Bearer not-a-token", "a refused token: the same pointer, with error=invalid_token"},
	} {
		code, params := mcpChallenge(t, hc, env.MCPURL, tc.authorization)
		if code != http.StatusUnauthorized || params["resource_metadata"] != wantMetadataURL {
			t.Errorf("%q: status %d, challenge %v; want 401 with resource_metadata=%q (%s)", tc.authorization, code, params, wantMetadataURL, tc.reason)
		}
	}

	// The SDK's own client-side discovery accepts it: resource matches the
	// endpoint it connected to, the authorization servers are safe URLs.
	prm, err := oauthex.GetProtectedResourceMetadata(testCtx(t), wantMetadataURL, env.MCPURL, hc)
	if err != nil {
		t.Fatalf("go-sdk discovery: %v", err)
	}
	if prm.Resource != env.MCPURL {
		t.Errorf("resource %q, want %q", prm.Resource, env.MCPURL)
	}

	want := map[string]any{"resource": env.MCPURL, "authorization_servers": []any{jwtIssuer}, "bearer_methods_supported": []any{"header"}}
	for _, tc := range []struct {
		path   string
		want   map[string]any
		reason string
	}{
		{mcpapi.ResourceMetadataPath + mcpapi.Path, want, "the path-suffixed form (RFC 9728 §3.1), the one the challenge names"},
		{mcpapi.ResourceMetadataPath, want, "the bare well-known path"},
		{mcpapi.ResourceMetadataPath + "/other", nil, "no other resource is described here"},
	} {
		code, doc := getDocument(t, hc, base+tc.path)
		if tc.want == nil {
			if code != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404 (%s)", tc.path, code, tc.reason)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, doc); code != http.StatusOK || diff != "" {
			t.Errorf("GET %s: status %d, document (-want +got) (%s):\n%s", tc.path, code, tc.reason, diff)
		}
	}
}

// Behind a proxy the gateway cannot know its public URL: jwt.resource says
// it, and the challenge points at the document under that URL.
func TestMCPAuthorizationDiscoveryConfigured(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	p := testPolicy(signer)
	const public = "https://tools.example.test/agents/mcp"
	p.Auth.JWT.Resource = public
	p.Auth.JWT.AuthorizationServers = []string{"https://login.example.test/tenant-a", "https://login.example.test/tenant-b"}
	p.Auth.JWT.ScopesSupported = []string{"tools.invoke", "tools.list"}
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(p))
	hc := httpClient(t, nil)
	base := strings.TrimSuffix(env.MCPURL, mcpapi.Path)

	code, params := mcpChallenge(t, hc, env.MCPURL, "")
	if want := "https://tools.example.test/.well-known/oauth-protected-resource/agents/mcp"; code != http.StatusUnauthorized || params["resource_metadata"] != want {
		t.Fatalf("status %d, challenge %v; want 401 with resource_metadata=%q", code, params, want)
	}
	// The proxy forwards that URL's path to the listener unchanged.
	u, _ := url.Parse(params["resource_metadata"])
	want := map[string]any{"resource": public,
		"authorization_servers":    []any{"https://login.example.test/tenant-a", "https://login.example.test/tenant-b"},
		"scopes_supported":         []any{"tools.invoke", "tools.list"},
		"bearer_methods_supported": []any{"header"}}
	for _, path := range []string{u.Path, mcpapi.ResourceMetadataPath, mcpapi.ResourceMetadataPath + mcpapi.Path} {
		code, doc := getDocument(t, hc, base+path)
		if diff := cmp.Diff(want, doc); code != http.StatusOK || diff != "" {
			t.Errorf("GET %s: status %d, document (-want +got):\n%s", path, code, diff)
		}
	}
}

func TestMCPAuthorizationDiscoveryOffWithoutJWT(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(testPolicy(nil)))
	hc := httpClient(t, nil)
	code, params := mcpChallenge(t, hc, env.MCPURL, "")
	if _, has := params["resource_metadata"]; code != http.StatusUnauthorized || has {
		t.Errorf("status %d, challenge %v; want 401 without resource_metadata (no JWT, nothing to discover)", code, params)
	}
	base := strings.TrimSuffix(env.MCPURL, mcpapi.Path)
	for _, path := range []string{mcpapi.ResourceMetadataPath, mcpapi.ResourceMetadataPath + mcpapi.Path} {
		if code, _ := getDocument(t, hc, base+path); code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404 without JWT authentication", path, code)
		}
	}
}

// Discovery values that would publish something unusable are refused at load.
func TestJWTDiscoveryConfigRefused(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	for _, tc := range []struct {
		name   string
		edit   func(*policy.JWTConfig)
		reason string
	}{
		{"resource not http", func(j *policy.JWTConfig) { j.Resource = "ftp://tools.example.test/mcp" }, "a resource is an http(s) URL"},
		{"resource fragment", func(j *policy.JWTConfig) { j.Resource = "https://tools.example.test/mcp#x" }, "RFC 9728 §1.2: no fragment"},
		{"server relative", func(j *policy.JWTConfig) { j.AuthorizationServers = []string{"/login"} }, "an issuer identifier is an absolute URL"},
		{"scope with space", func(j *policy.JWTConfig) { j.ScopesSupported = []string{"a b"} }, "RFC 6749 §3.3 scope token"},
	} {
		p := testPolicy(signer)
		tc.edit(p.Auth.JWT)
		if _, err := policy.NewAuthenticator(testCtx(t), p.Auth); err == nil {
			t.Errorf("%s: accepted (%s)", tc.name, tc.reason)
		}
	}
}
