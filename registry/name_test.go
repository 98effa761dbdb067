package registry

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidNameIsNamePattern: the hand-written check agrees with the
// documented pattern.
func TestValidNameIsNamePattern(t *testing.T) {
	re := regexp.MustCompile(NamePattern)
	for _, tc := range []struct{ name, reason string }{
		{"create_note", "an ordinary name"},
		{"a.b-c_D9", "every allowed character class"},
		{"", "empty"},
		{strings.Repeat("x", 64), "exactly the length bound"},
		{strings.Repeat("x", 65), "one over it"},
		{"bad name", "a space"},
		{"naïve", "a non-ASCII letter"},
		{"x\n", "a trailing newline ($ must not let it through)"},
		{"x/y", "a slash"},
	} {
		if got, want := ValidName(tc.name), re.MatchString(tc.name); got != want {
			t.Errorf("ValidName(%q) = %v, NamePattern says %v (%s)", tc.name, got, want, tc.reason)
		}
	}
}
