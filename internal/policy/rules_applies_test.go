package policy

import "testing"

func TestRulesAppliesTo(t *testing.T) {
	empty, err := NewRules(nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRules([]Rule{
		{Name: "notes", Tools: []string{"create_*"}, Expr: "true", Message: "m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := NewRules([]Rule{{Name: "all", Expr: "true", Message: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		rs     *Rules
		tool   string
		want   bool
		reason string
	}{
		{"nil", nil, "x", false, "no rules configured"},
		{"empty", empty, "x", false, "no rules configured"},
		{"match", rs, "create_note", true, "the rule's tool pattern matches"},
		{"no match", rs, "delete_note", false, "the only rule is limited to other tools"},
		{"no tools", all, "anything", true, "a rule without tools applies to every tool"},
	}
	for _, tc := range tests {
		if got := tc.rs.AppliesTo(tc.tool); got != tc.want {
			t.Errorf("%s: AppliesTo(%q) = %v, want %v (%s)", tc.name, tc.tool, got, tc.want, tc.reason)
		}
	}
}
