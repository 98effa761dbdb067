package server

import (
	"strings"
	"testing"
	"time"
)

// TestPolicyAuditRetention: audit.keep_rotated and keep_rotated_for load as
// written; negative values, and retention without rotation, are refused
// naming the fields.
func TestPolicyAuditRetention(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		count             int
		age               time.Duration
		wantErr           string
	}{
		{name: "default", reason: "unset: every rotated file is kept",
			doc: "auth: {mode: off}\naudit: {path: a.jsonl, rotate_bytes: 1000}\n"},
		{name: "set", reason: "both load as written",
			doc:   "auth: {mode: off}\naudit: {path: a.jsonl, rotate_bytes: 1000, keep_rotated: 5, keep_rotated_for: 720h}\n",
			count: 5, age: 720 * time.Hour},
		{name: "negative", reason: "a negative count is refused",
			doc: "auth: {mode: off}\naudit: {path: a.jsonl, rotate_bytes: 1000, keep_rotated: -1}\n", wantErr: "audit.keep_rotated"},
		{name: "no-rotation", reason: "retention without rotation would keep nothing from being removed: refused",
			doc: "auth: {mode: off}\naudit: {path: a.jsonl, keep_rotated: 3}\n", wantErr: "need audit.rotate_bytes"},
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
			if err != nil || p.Audit.KeepRotated != tc.count || p.Audit.KeepRotatedFor != tc.age {
				t.Errorf("policy audit %+v, %v; want keep_rotated %d, keep_rotated_for %v (%s)", p.Audit, err, tc.count, tc.age, tc.reason)
			}
		})
	}
}
