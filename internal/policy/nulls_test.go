package policy

import (
	"strings"
	"testing"
)

func TestOptionalNulls(t *testing.T) {
	t.Parallel()
	overrides := []ToolOptionalNulls{{Match: "legacy_*", Mode: OptionalNullsKeep}, {Match: "legacy_*", Mode: OptionalNullsDrop}, {Match: "new_*", Mode: OptionalNullsDrop}}
	cases := []struct {
		name, reason string
		cfg          OptionalNullsConfig
		tool         string
		want         bool
		wantNil      bool   // no tool drops: NewOptionalNulls returns nil
		wantErr      string // a substring of the error
	}{
		{name: "default", reason: "absent means keep: outside RT-TOOL-8, so off by default",
			cfg: OptionalNullsConfig{}, tool: "create_note", wantNil: true},
		{name: "keep", reason: "keep written out is the default", cfg: OptionalNullsConfig{Mode: OptionalNullsKeep}, tool: "create_note", wantNil: true},
		{name: "drop", reason: "drop applies to every tool", cfg: OptionalNullsConfig{Mode: OptionalNullsDrop}, tool: "create_note", want: true},
		{name: "first-match-wins", reason: "the first matching glob decides, as rate_limit.tools",
			cfg: OptionalNullsConfig{Mode: OptionalNullsDrop, Tools: overrides}, tool: "legacy_search", want: false},
		{name: "override-drop", reason: "a per-tool drop under the default keep",
			cfg: OptionalNullsConfig{Tools: overrides}, tool: "new_search", want: true},
		{name: "no-match", reason: "a tool no glob matches gets the default",
			cfg: OptionalNullsConfig{Tools: overrides}, tool: "create_note", want: false},
		{name: "overrides-only-keep", reason: "keep everywhere: nothing to check per call",
			cfg: OptionalNullsConfig{Tools: []ToolOptionalNulls{{Match: "*", Mode: OptionalNullsKeep}}}, wantNil: true},
		{name: "bad-mode", reason: "a misspelt mode must not silently keep or drop",
			cfg: OptionalNullsConfig{Mode: "remove"}, wantErr: `normalize.optional_nulls "remove": must be "keep" or "drop"`},
		{name: "bad-glob", reason: "a glob that does not compile names its entry",
			cfg: OptionalNullsConfig{Tools: []ToolOptionalNulls{{Match: "[", Mode: OptionalNullsDrop}}}, wantErr: "normalize.tools[0]: match"},
		{name: "empty-glob", reason: "an entry must say what it matches",
			cfg: OptionalNullsConfig{Tools: []ToolOptionalNulls{{Mode: OptionalNullsDrop}}}, wantErr: "normalize.tools[0]: match"},
		{name: "override-without-mode", reason: "an override must say keep or drop",
			cfg: OptionalNullsConfig{Tools: []ToolOptionalNulls{{Match: "x"}}}, wantErr: "normalize.tools[0].optional_nulls is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NewOptionalNulls(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (%s)", err, tc.reason)
			}
			if (o == nil) != tc.wantNil {
				t.Errorf("nil %v, want %v (%s)", o == nil, tc.wantNil, tc.reason)
			}
			if got := o.Drop(tc.tool); got != tc.want {
				t.Errorf("Drop(%q) = %v, want %v (%s)", tc.tool, got, tc.want, tc.reason)
			}
		})
	}
}
