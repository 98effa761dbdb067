package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestAuditRolesBounded: a token's role claim is the issuer's to fill, so
// the line keeps at most maxAuditRoles roles, each bounded, and says how
// many more there were; the caller's slice is left as it was.
func TestAuditRolesBounded(t *testing.T) {
	roles := make([]string, 40)
	for i := range roles {
		roles[i] = "r"
	}
	roles[0] = strings.Repeat("x", 10*MaxRecordedBytes)
	orig := slices.Clone(roles)
	rec := AuditRecord{CallerRoles: roles}
	rec.bound()
	if len(rec.CallerRoles) != maxAuditRoles+1 || rec.CallerRoles[maxAuditRoles] != "… and 8 more" {
		t.Errorf("bounded roles %d, last %q: want %d and a count of the rest", len(rec.CallerRoles), rec.CallerRoles[len(rec.CallerRoles)-1], maxAuditRoles+1)
	}
	if len(rec.CallerRoles[0]) > MaxRecordedBytes+32 { // the prefix and its length note
		t.Errorf("a role of %d bytes kept %d", len(roles[0]), len(rec.CallerRoles[0]))
	}
	if !slices.Equal(roles, orig) {
		t.Error("bound changed the caller's roles")
	}
	few := AuditRecord{CallerRoles: []string{RoleInvoker}}
	few.bound()
	if !slices.Equal(few.CallerRoles, []string{RoleInvoker}) {
		t.Errorf("a short list changed: %v", few.CallerRoles)
	}
}
