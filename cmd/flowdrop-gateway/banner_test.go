package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// TestBannerCarriesTheCredentialHeader: with authentication on, the "try
// it" lines carry the API-key header with a placeholder (a call pasted
// without it would only be refused); with it off they carry none.
func TestBannerCarriesTheCredentialHeader(t *testing.T) {
	on := server.DemoPolicy()
	on.Auth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{{Name: "k", SHA256: policy.HashAPIKey("secret-key-1"), Roles: []string{policy.RoleInvoker}}}}
	for _, tc := range []struct {
		reason string
		policy server.PolicyConfig
		want   bool
	}{
		{"authentication on: the header, as a placeholder", on, true},
		{"authentication off: no header", server.DemoPolicy(), false},
	} {
		env := gatewaytest.Start(t, gatewaytest.WithPolicy(tc.policy))
		var b bytes.Buffer
		printBanner(&b, env.Gateway, "")
		out := b.String()
		has := strings.Contains(out, "grpcurl -plaintext -H 'x-api-key: <your API key>'") && strings.Contains(out, "FLOWDROP_API_KEY='<your API key>' go run ./cmd/flowdropctl invoke")
		if has != tc.want || strings.Contains(out, "secret-key-1") {
			t.Errorf("%s: banner:\n%s", tc.reason, out)
		}
	}
}

// TestBannerNamesTheConsole: with the admin listener on, the banner gives
// the console's and the status page's URLs on it (a newcomer running the
// demo finds them without reading the operations guide); without it, none.
func TestBannerNamesTheConsole(t *testing.T) {
	for _, tc := range []struct {
		reason string
		opts   []gatewaytest.Option
		want   bool
	}{
		{"the admin listener on: its console and status page", []gatewaytest.Option{gatewaytest.WithAdmin()}, true},
		{"no admin listener: no console to name", nil, false},
	} {
		env := gatewaytest.Start(t, tc.opts...)
		var b bytes.Buffer
		printBanner(&b, env.Gateway, "")
		out := b.String()
		addr := env.Gateway.AdminAddr()
		has := strings.Contains(out, "operator's console: http://"+addr+"/console/") && strings.Contains(out, "status page http://"+addr+"/")
		if has != tc.want || (!tc.want && strings.Contains(out, "console")) {
			t.Errorf("%s: banner:\n%s", tc.reason, out)
		}
	}
}
