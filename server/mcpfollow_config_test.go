package server

import (
	"strings"
	"testing"
	"time"
)

// TestPolicyMCPUpstreams: mcp_upstreams.relist_interval loads as written,
// a sub-second interval and a misspelt key are refused.
func TestPolicyMCPUpstreams(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		want              time.Duration
		wantErr           string
	}{
		{name: "default", reason: "unset keeps the default (the follower applies DefaultMCPRelistInterval)",
			doc: "auth: {mode: off}\n", want: 0},
		{name: "set", reason: "the interval loads as written",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist_interval: 2m}\n", want: 2 * time.Minute},
		{name: "too-short", reason: "a sub-second re-list would hammer every upstream",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist_interval: 100ms}\n", wantErr: "mcp_upstreams.relist_interval"},
		{name: "misspelt", reason: "a typo must not leave the default silently",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist: 5s}\n", wantErr: "relist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc), "inline")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParsePolicy: %v, want an error naming %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || p.MCPUpstreams.RelistInterval != tc.want {
				t.Errorf("ParsePolicy: %+v, %v; want relist_interval %v (%s)", p.MCPUpstreams, err, tc.want, tc.reason)
			}
		})
	}
}
