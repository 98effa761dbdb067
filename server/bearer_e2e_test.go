package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestBearerAcceptsAPIKeyOrJWT: with both API keys and JWT configured,
// "Authorization: Bearer <api key or JWT>" accepts either, on both faces,
// and a bearer that is neither is refused with a message saying so, never
// echoing it.
func TestBearerAcceptsAPIKeyOrJWT(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithPolicy(testPolicy(signer)))
	token := signer.token(t, jwtAud, time.Now().Add(time.Hour), policy.RoleInvoker)
	const notAKey = "fd_neither_key_nor_jwt"

	cases := []struct {
		name, reason, bearer string
		ok                   bool
	}{
		{name: "api-key", reason: "an API key as bearer is a key, JWT configured or not", bearer: keyInvoker, ok: true},
		{name: "jwt", reason: "a valid JWT is still accepted", bearer: token, ok: true},
		{name: "neither", reason: "an unknown key that is no JWT either is refused", bearer: notAKey},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			_, err := env.Client.InvokeTool(withBearer(tc.bearer), &gatewayv1.InvokeToolRequest{Tool: "create_note",
				Arguments: gatewaytest.Args(t, map[string]any{"title": "x"})})
			if tc.ok {
				if err != nil {
					t.Fatalf("InvokeTool: %v (%s)", err, tc.reason)
				}
				return
			}
			if status.Code(err) != codes.Unauthenticated {
				t.Fatalf("InvokeTool: %v, want Unauthenticated (%s)", err, tc.reason)
			}
			msg := status.Convert(err).Message()
			if !strings.Contains(msg, "neither a recognised API key nor a well-formed JWT") || strings.Contains(msg, tc.bearer) {
				t.Errorf("message %q: want it to say the bearer is neither, without echoing it", msg)
			}
		})
		t.Run(tc.name+"/mcp", func(t *testing.T) {
			ctx := testCtx(t)
			cs, err := mcpConnect(t, ctx, env.MCPURL, mcpClientOpts{header: http.Header{"Authorization": {"Bearer " + tc.bearer}}})
			if !tc.ok {
				if err == nil {
					t.Fatalf("connect succeeded, want 401 (%s)", tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v (%s)", err, tc.reason)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_note", Arguments: json.RawMessage(`{"title":"x"}`)})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v (%s)", err, res, tc.reason)
			}
		})
	}
	t.Run("neither/mcp-message", func(t *testing.T) {
		// reason: the 401 body says why, like the gRPC status, without the credential.
		req, _ := http.NewRequest(http.MethodPost, env.MCPURL, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+notAKey)
		resp, err := httpClient(t, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "neither a recognised API key") || strings.Contains(string(body), notAKey) {
			t.Errorf("status %d body %q", resp.StatusCode, body)
		}
	})
}
