package main

import (
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
)

// TestToolsListHonoursRetryInfo: against a real gateway whose registry
// calls are limited to a burst of 1, `tools list --page-size 2` pages
// through the demo tools by waiting out each RetryInfo; with a --timeout
// shorter than the wait it gives up at once with the refusal.
func TestToolsListHonoursRetryInfo(t *testing.T) {
	p := authPolicy("")
	p.RateLimit = policy.RateLimitConfig{Registry: policy.MethodRate{Rate: 4, Burst: 1}}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p))
	slow := authPolicy("")
	slow.RateLimit = policy.RateLimitConfig{Registry: policy.MethodRate{Rate: 0.01, Burst: 1}}
	slowEnv := gatewaytest.Start(t, gatewaytest.WithPolicy(slow))
	key := map[string]string{envAPIKey: keyInvoker}
	cases := []ctlCase{
		{name: "retries-and-pages", reason: "pages 2 and 3 are refused with RetryInfo (~250ms) and retried after it",
			env: key, args: []string{"tools", "list", "--addr", env.Addr, "--page-size", "2", "--timeout", "20s"},
			wantStdout: []string{"apply_ops", "create_note"}, wantStderr: []string{"note: ResourceExhausted; retrying in"}},
		{name: "deadline-first", reason: "a wait (capped at 10s) longer than --timeout is not started: the refusal is final",
			env: key, args: []string{"tools", "list", "--addr", slowEnv.Addr, "--page-size", "2", "--timeout", "2s"},
			wantCode: 1, wantStderr: []string{"ResourceExhausted", "rate limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtl(t, tc) })
	}
}
