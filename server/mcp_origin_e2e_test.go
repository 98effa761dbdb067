package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// originPolicy: authentication on (API key "agent-key"), every tool
// allowed, and origins as the MCP endpoint's allowed browser origins.
func originPolicy(origins ...string) server.PolicyConfig {
	p := server.DemoPolicy()
	p.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "agent", SHA256: policy.HashAPIKey("agent-key"), Roles: []string{policy.RoleInvoker}}}}
	p.MCP.AllowedOrigins = origins
	return p
}

// originPost POSTs a tools/list to url with header; it returns the status,
// the response headers and the body.
func originPost(t *testing.T, ctx context.Context, url string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, resp.Header, string(b)
}

// TestMCPOriginValidation: a request with a browser Origin not in the
// policy's mcp.allowed_origins is refused with 403 before authentication
// and before its body is read; a listed origin (compared as browsers
// serialize origins) and a request without Origin are served, by the
// go-sdk client and over plain HTTP; a reload replaces the list.
func TestMCPOriginValidation(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy = originPolicy("https://app.example.com", "http://localhost:5173")
	}))
	ctx := testCtx(t)
	mu, err := url.Parse(env.MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	ownHost, ownIP, ownPort := mu.Host, mu.Hostname(), mu.Port()
	withOrigin := func(origin string) http.Header {
		h := http.Header{"Authorization": {"Bearer agent-key"}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		return h
	}

	for _, tc := range []struct {
		name, reason, origin string
		served               bool
		// cors: the answer names the origin (a listed page reads it); the
		// endpoint's own origin needs no CORS.
		cors bool
	}{
		{"no origin", "agents and SDKs send no Origin: served as before", "", true, false},
		{"listed", "a listed browser origin is served", "https://app.example.com", true, true},
		{"listed, loopback dev server", "a listed origin with its port", "http://localhost:5173", true, true},
		{"listed, other case", "scheme and host compare case-insensitively", "HTTPS://App.Example.COM", true, true},
		{"listed, default port written out", "https://host:443 is the origin https://host", "https://app.example.com:443", true, true},
		{"listed host, other port", "another port is another origin", "https://app.example.com:8443", false, false},
		{"listed host, other scheme", "http: is another origin than https:", "http://app.example.com", false, false},
		{"listed loopback, other port", "another local dev server is another origin", "http://localhost:5174", false, false},
		{"own origin", "the endpoint's own origin (what the MCP conformance suite sends) is no foreign page", "http://" + ownHost, true, false},
		{"own origin as localhost", "on a loopback listener, localhost at its port is the same server", "http://localhost:" + ownPort, true, false},
		{"own host, other port", "another port on the gateway's host is another server's page", "http://" + ownIP + ":1", false, false},
		{"foreign", "a page elsewhere (or a DNS-rebinding one) is refused", "https://evil.example", false, false},
		{"null", "sandboxed frames and file: pages are refused", "null", false, false},
		{"garbage", "what is not an origin is refused", "not an origin", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: withOrigin(tc.origin)})
			if !tc.served {
				if err == nil {
					t.Fatalf("go-sdk client connected with Origin %q (%s)", tc.origin, tc.reason)
				}
				// Over plain HTTP, without credentials: 403, not 401, so the
				// origin is checked before authentication.
				status, _, body := originPost(t, ctx, env.MCPURL, http.Header{"Origin": {tc.origin}})
				if status != http.StatusForbidden || body != "origin not allowed\n" {
					t.Errorf("Origin %q: %d %q, want 403 %q (%s)", tc.origin, status, body, "origin not allowed\n", tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Origin %q: connect: %v (%s)", tc.origin, err, tc.reason)
			}
			if names := toolNames(t, ctx, cs); len(names) == 0 {
				t.Errorf("Origin %q: tools/list is empty (%s)", tc.origin, tc.reason)
			}
			status, h, _ := originPost(t, ctx, env.MCPURL, withOrigin(tc.origin))
			if status != http.StatusOK {
				t.Errorf("Origin %q: plain POST %d, want 200 (%s)", tc.origin, status, tc.reason)
			}
			if got := h.Get("Access-Control-Allow-Origin"); tc.cors && got != tc.origin {
				t.Errorf("Origin %q: Access-Control-Allow-Origin %q, want the origin (so the listed page can read the answer)", tc.origin, got)
			}
		})
	}

	t.Run("two Origin headers", func(t *testing.T) {
		status, _, _ := originPost(t, ctx, env.MCPURL, http.Header{"Origin": {"https://app.example.com", "https://evil.example"}})
		if status != http.StatusForbidden {
			t.Errorf("status %d, want 403: which one a browser meant is unknowable", status)
		}
	})

	t.Run("long origin is not echoed", func(t *testing.T) {
		long := "https://" + strings.Repeat("x", 6000) + ".example"
		status, _, body := originPost(t, ctx, env.MCPURL, http.Header{"Origin": {long}})
		if status != http.StatusForbidden || strings.Contains(body, "xxxx") || len(body) > 64 {
			t.Errorf("status %d, body %d bytes; want 403 with a short body that does not repeat the origin", status, len(body))
		}
	})

	t.Run("refused before the body is read", func(t *testing.T) {
		// Headers and one byte of a promised megabyte: had the body been
		// awaited, the answer would come only at the read timeout (30s).
		u, _ := url.Parse(env.MCPURL)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, "POST "+u.Path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nOrigin: https://evil.example\r\n"+
			"Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer before the body: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})

	t.Run("CORS preflight", func(t *testing.T) {
		for _, tc := range []struct {
			name, reason, origin string
			status               int
		}{
			{"listed", "a listed page's browser asks first; the answer needs no credentials", "https://app.example.com", http.StatusNoContent},
			{"foreign", "a foreign page's preflight is refused like its requests", "https://evil.example", http.StatusForbidden},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodOptions, env.MCPURL, nil)
				req.Header.Set("Origin", tc.origin)
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
				resp, err := httpClient(t, nil).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, tc.reason)
				}
				if tc.status != http.StatusNoContent {
					return
				}
				if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.origin {
					t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.origin)
				}
				if got := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "authorization") {
					t.Errorf("Access-Control-Allow-Headers %q lacks authorization", got)
				}
			})
		}
	})

	t.Run("resource metadata is public", func(t *testing.T) {
		// Not checked (documented): the document is public and read
		// cross-origin by design; without JWT discovery it is 404.
		u, _ := url.Parse(env.MCPURL)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+u.Host+"/.well-known/oauth-protected-resource", nil)
		req.Header.Set("Origin", "https://evil.example")
		resp, err := httpClient(t, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %d, want 404 (the metadata path is not origin-checked)", resp.StatusCode)
		}
	})

	t.Run("reload replaces the list", func(t *testing.T) {
		if err := env.Gateway.ReloadPolicy(originPolicy("https://new.example")); err != nil {
			t.Fatal(err)
		}
		for origin, want := range map[string]int{"https://new.example": http.StatusOK, "https://app.example.com": http.StatusForbidden} {
			if status, _, _ := originPost(t, ctx, env.MCPURL, withOrigin(origin)); status != want {
				t.Errorf("after reload, Origin %q: %d, want %d", origin, status, want)
			}
		}
		if err := env.Gateway.ReloadPolicy(originPolicy("https://*.example")); err == nil {
			t.Error("a reload with a wildcard origin was accepted")
		}
		if status, _, _ := originPost(t, ctx, env.MCPURL, withOrigin("https://new.example")); status != http.StatusOK {
			t.Errorf("a refused reload changed the list in force: %d", status)
		}
	})
}
