package policy

import (
	"path"
	"testing"
)

// TestMatchToolIsPathMatch: matchTool answers as path.Match for every
// pattern and name built from a small alphabet that holds what changes the
// answer ('*', '?', classes, escapes, '/', a non-ASCII letter), and for the
// rows below.
func TestMatchToolIsPathMatch(t *testing.T) {
	t.Parallel()
	rows := []struct{ reason, pattern, name string }{
		{"a leading star matches a suffix", "*77", "team123.tool-000177"},
		{"a trailing star matches a prefix", "team9*", "team901.tool-1"},
		{"a star does not cross '/' in path.Match", "a*b", "a/b"},
		{"'?' is one rune in path.Match, not one byte", "a?b", "aéb"},
		{"a class", "team[5-6]*", "team512.x"},
		{"an escaped star is a literal star", `a\*`, "a*"},
		{"stars around a literal", "*.tool-*", "team001.tool-000001"},
		{"a star matches the empty run", "create_*", "create_"},
		{"no star: the whole name", "update_settings", "update_settings"},
	}
	for _, r := range rows {
		want, _ := path.Match(r.pattern, r.name)
		if got := matchTool(r.pattern, r.name); got != want {
			t.Errorf("matchTool(%q, %q) = %v, path.Match %v (%s)", r.pattern, r.name, got, want, r.reason)
		}
	}
	tokens := []string{"a", "b", ".", "*", "?", "[ab]", `\*`, "/", "é"}
	letters := []string{"a", "b", ".", "*", "?", "/", "é"}
	var patterns, names []string
	var grow func(out *[]string, alphabet []string, prefix string, depth int)
	grow = func(out *[]string, alphabet []string, prefix string, depth int) {
		*out = append(*out, prefix)
		if depth == 0 {
			return
		}
		for _, t := range alphabet {
			grow(out, alphabet, prefix+t, depth-1)
		}
	}
	grow(&patterns, tokens, "", 3)
	grow(&names, letters, "", 4)
	checked := 0
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			continue // not a pattern an Authorizer accepts
		}
		for _, n := range names {
			want, err := path.Match(p, n)
			if err != nil {
				continue
			}
			checked++
			if got := matchTool(p, n); got != want {
				t.Fatalf("matchTool(%q, %q) = %v, path.Match %v", p, n, got, want)
			}
		}
	}
	if checked < 100_000 {
		t.Fatalf("only %d pairs compared", checked)
	}
}
