package server_test

import (
	"net/url"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
)

// declareCredential declares the credential in env or file as a source of
// the policy for upstreamURL's origin (give it after WithPolicy).
func declareCredential(env, file, upstreamURL string) gatewaytest.Option {
	u, err := url.Parse(upstreamURL)
	if err != nil {
		panic(err)
	}
	return gatewaytest.WithConfig(func(c *server.Config) {
		c.Policy.Credentials = append(c.Policy.Credentials, policy.CredentialSource{Env: env, File: file, Origins: []string{u.Scheme + "://" + u.Host}})
	})
}
