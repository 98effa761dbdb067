package console

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShownJSON: the Invoke panel shows an answer indented and at most
// limit bytes of it, cut on a rune boundary, counting what it leaves out.
func TestShownJSON(t *testing.T) {
	for _, c := range []struct {
		name, reason, in string
		limit            int
		want             string
		omitted          int
	}{
		{"small", "within the limit: indented, nothing left out", `{"a":1}`, 100, "{\n  \"a\": 1\n}", 0},
		{"cut", "over the limit: the first limit bytes, the rest counted", `"` + strings.Repeat("x", 20) + `"`, 10, `"xxxxxxxxx`, 12},
		{"rune", "a cut inside a rune drops the partial rune", `"ééé"`, 4, `"é`, 5},
		{"not json", "bytes that are not JSON are shown as they are", `{oops`, 100, `{oops`, 0},
	} {
		got, omitted := shownJSON([]byte(c.in), c.limit)
		if got != c.want || omitted != c.omitted || !utf8.ValidString(got) || len(got) > c.limit {
			t.Errorf("%s: shownJSON = %q, %d; want %q, %d (%s)", c.name, got, omitted, c.want, c.omitted, c.reason)
		}
	}
}
