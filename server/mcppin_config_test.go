package server

import (
	"slices"
	"strings"
	"testing"
)

// TestPolicyMCPAutoApprove: mcp_upstreams.auto_approve loads the kinds of
// upstream change applied without an admin; none by default; an unknown
// kind is refused naming it (a typo must neither widen nor silently drop
// what is held).
func TestPolicyMCPAutoApprove(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		want              []string
		wantErr           string
	}{
		{name: "default", reason: "unset: every upstream change is held for an admin",
			doc: "auth: {mode: off}\n"},
		{name: "set", reason: "the kinds load as written",
			doc: "auth: {mode: off}\nmcp_upstreams: {auto_approve: [compatible-schema, description]}\n", want: []string{"compatible-schema", "description"}},
		{name: "unknown-kind", reason: "a kind the gateway does not know is refused, naming it",
			doc: "auth: {mode: off}\nmcp_upstreams: {auto_approve: [schema]}\n", wantErr: `mcp_upstreams.auto_approve: "schema" is not a kind of change`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc), "inline")
			if err == nil {
				err = p.validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("policy: %v, want an error containing %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || !slices.Equal(p.MCPUpstreams.AutoApprove, tc.want) {
				t.Errorf("policy: %+v, %v; want auto_approve %v (%s)", p.MCPUpstreams, err, tc.want, tc.reason)
			}
		})
	}
}
