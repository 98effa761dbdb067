package mcpapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
)

const (
	unitInvokerKey = "fd_unit_invoker_3e9a51"
	unitAdminKey   = "fd_unit_admin_0b7c44"
)

// TestAuthenticateHTTP: the MCP endpoint's authentication reads the same
// credentials as gRPC, from HTTP headers.
func TestAuthenticateHTTP(t *testing.T) {
	t.Parallel()
	auth, err := policy.NewAuthenticator(t.Context(), policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
		{Name: "invoker", SHA256: policy.HashAPIKey(unitInvokerKey), Roles: []string{policy.RoleInvoker}},
		{Name: "admin", SHA256: policy.HashAPIKey(unitAdminKey), Roles: []string{policy.RoleAdmin}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	m := &Server{}
	cases := []struct {
		name, reason string
		headers      map[string]string
		subject      string // "" when refused
		refusal      string
	}{
		{name: "api-key-header", reason: "X-API-Key identifies the caller", headers: map[string]string{"X-API-Key": unitInvokerKey}, subject: "invoker"},
		{name: "bearer-api-key", reason: "without JWT configured a bearer token is an API key", headers: map[string]string{"Authorization": "Bearer " + unitAdminKey}, subject: "admin"},
		{name: "none", reason: "no credentials", refusal: policy.ReasonCredentialsMissing},
		{name: "basic", reason: "another scheme is refused, not ignored", headers: map[string]string{"Authorization": "Basic " + unitInvokerKey}, refusal: policy.ReasonCredentialsMalformed},
		{name: "unknown", reason: "an unknown key", headers: map[string]string{"X-API-Key": "fd_nope"}, refusal: policy.ReasonAPIKeyUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			c, err := m.authenticateHTTP(r, auth)
			if tc.refusal != "" {
				pe, ok := policy.AsError(err)
				if !ok || pe.Reason != tc.refusal || pe.Code != policy.Unauthenticated {
					t.Fatalf("err = %v, want %s (%s)", err, tc.refusal, tc.reason)
				}
				if strings.Contains(pe.Message, unitInvokerKey) {
					t.Errorf("message echoes the key")
				}
				return
			}
			if err != nil || c.Subject != tc.subject {
				t.Fatalf("caller %+v, err %v, want %s (%s)", c, err, tc.subject, tc.reason)
			}
		})
	}
}
