package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		in, reason string
		same       bool
	}{
		{"create_note", "short strings are returned as they are", true},
		{strings.Repeat("a", MaxRecordedBytes), "exactly the bound", true},
		{strings.Repeat("a", 1<<20), "a 1 MiB name is cut", false},
		{strings.Repeat("é", MaxRecordedBytes), "cut at a rune boundary", false},
	} {
		got := Bound(tc.in)
		if (got == tc.in) != tc.same || len(got) > MaxRecordedBytes+32 || !utf8.ValidString(got) {
			t.Errorf("Bound(%.20q… %d bytes) = %.40q… (%d bytes) (%s)", tc.in, len(tc.in), got, len(got), tc.reason)
		}
	}
}
