package policy

import "testing"

// ToolAllowed is AllowTool's verdict, and allocates nothing: listings ask
// it for every candidate of a page.
func TestToolAllowedIsAllowToolsVerdict(t *testing.T) {
	az, err := NewAuthorizer(AuthzConfig{
		Callers: map[string]ToolAccess{"ops": {Allow: []string{"ops.*", "*.read"}, Deny: []string{"ops.drop*"}}},
		Default: ToolAccess{Allow: []string{"*"}, Deny: []string{"admin.*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason string
		caller string
		tool   string
	}{
		{"allowed by the caller's pattern", "ops", "ops.restart"},
		{"allowed by a second pattern", "ops", "notes.read"},
		{"denied: deny wins over allow", "ops", "ops.drop_table"},
		{"not in the caller's allow list", "ops", "notes.write"},
		{"a caller not listed gets the default", "someone", "notes.write"},
		{"the default's deny", "someone", "admin.users"},
	}
	for _, c := range cases {
		caller := Caller{Subject: c.caller}
		want := az.AllowTool(caller, c.tool) == nil
		if got := az.ToolAllowed(caller, c.tool); got != want {
			t.Errorf("%s: ToolAllowed(%s, %s) = %v, AllowTool says %v", c.reason, c.caller, c.tool, got, want)
		}
		if n := testing.AllocsPerRun(50, func() { az.ToolAllowed(caller, c.tool) }); n != 0 {
			t.Errorf("%s: ToolAllowed allocates %v times", c.reason, n)
		}
	}
}
