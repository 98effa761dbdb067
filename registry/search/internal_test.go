package search

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		reason, in string
		want       []string
	}{
		{"dots and underscores split", "github.create_issue", []string{"github", "create", "issue"}},
		{"dashes split", "slack-add-reaction", []string{"slack", "add", "reaction"}},
		{"camelCase splits", "getPodLogs", []string{"get", "pod", "log"}},
		{"an acronym before a word", "HTTPServerURL", []string{"http", "server", "url"}},
		{"a gRPC method name", "Billing.CreateInvoice", []string{"billing", "create", "invoice"}},
		{"digits apart from letters", "sha256sum", []string{"sha", "256", "sum"}},
		{"plurals to singulars", "queries issues addresses boxes", []string{"query", "issue", "address", "box"}},
		{"-us and -ss words keep their s", "status process", []string{"status", "process"}},
		{"stop words dropped", "the name of a tool", []string{"name", "tool"}},
		{"a long run is cut", "x" + string(make([]byte, 0)) + "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", []string{"xabcdefghijabcdefghijabcdefghijabcdefghijabcdefg"}},
	} {
		if got := tokens(nil, c.in, 100, true); !slices.Equal(got, c.want) {
			t.Errorf("%s: tokens(%q) = %q, want %q", c.reason, c.in, got, c.want)
		}
	}
	if got := tokens(nil, "a b c d e f", 2, false); len(got) != 2 {
		t.Errorf("max 2: %q", got)
	}
}

// TestSyncIsIncremental: one changed tool among many re-indexes that tool
// only (one new document; the others keep theirs), and churn is compacted.
func TestSyncIsIncremental(t *testing.T) {
	reg, x := start(t, 500)
	if _, err := x.Search("tool", 1, nil); err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(x.docs)
	update(t, reg, 7, "changed")
	x.Sync()
	if len(x.docs) != len(before)+1 || x.dead != 1 {
		t.Fatalf("docs %d → %d, dead %d: want one document added and one removed", len(before), len(x.docs), x.dead)
	}
	for i, d := range before {
		if d.entry.Tool.Name != "t7" && x.docs[i].entry != d.entry {
			t.Fatalf("document %d (%s) changed", i, d.entry.Tool.Name)
		}
	}
	for i := range 600 {
		update(t, reg, i%5, "again")
		x.Sync()
	}
	if len(x.docs) > 500+256 || x.dead >= 256 {
		t.Fatalf("after churn: %d documents for 500 tools, %d dead: not compacted", len(x.docs), x.dead)
	}
}
