package chaos

import "testing"

func TestDocumented(t *testing.T) {
	for _, tc := range []struct {
		code, reason string
		want         bool
	}{
		{"Unavailable/transport", "the replica was down: no gateway answered", true},
		{"transport", "an MCP exchange that failed below JSON-RPC", true},
		{"ResourceExhausted/RATE_LIMITED", "the fleet limit, gRPC's ErrorInfo form", true},
		{"is_error/rate-limit-unavailable", "Redis away, fallback deny, MCP's _meta form", true},
		{"Unavailable/IDEMPOTENCY_UNAVAILABLE", "the idempotency store away", true},
		{"Aborted/IDEMPOTENCY_IN_PROGRESS", "a killed replica's claim still held", true},
		{"Internal", "never a documented refusal", false},
		{"InvalidArgument/IDEMPOTENCY_KEY_REUSED", "the soak never reuses a key with other arguments", false},
		{"is_error/", "a tool error without a reason: the backends never answer one", false},
		{"jsonrpc -32603", "an MCP internal error", false},
	} {
		if got := documented(tc.code); got != tc.want {
			t.Errorf("documented(%q) = %v, want %v (%s)", tc.code, got, tc.want, tc.reason)
		}
	}
}
