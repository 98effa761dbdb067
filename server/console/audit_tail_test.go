package console

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailOf: only the window's last bytes are read; the line the window
// cuts and lines that are not records are skipped; the matching lines come
// newest first, at most maxAuditRows.
func TestTailOf(t *testing.T) {
	line := func(i int, decision string) string {
		return fmt.Sprintf(`{"time":"2026-01-01T00:00:00Z","caller_subject":"c%d","tool":"t","decision":"%s","args_sent":{"secret":"s%d"}}`+"\n", i%3, decision, i)
	}
	var b strings.Builder
	for i := range 1000 {
		d := "allow"
		if i%2 == 1 {
			d = "deny"
		}
		b.WriteString(line(i, d))
		if i == 995 {
			b.WriteString("not json\n")
		}
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	one := int64(len(line(999, "deny")))
	for _, c := range []struct {
		name, reason string
		window       int64
		sel          auditFilter
		scanned      int
		first        string // the newest line's caller
		rows         int
		truncated    bool
	}{
		{"cut", "a window 2.5 lines long holds 2 whole lines (the cut one is dropped)", one*5/2 + 1, auditFilter{}, 2, "c0", 2, false},
		{"garbage", "a line that is not a record is not counted", one*6 + 10, auditFilter{}, 5, "c0", 5, false},
		{"filter", "the decision filter", one*10 + 20, auditFilter{Decision: "deny"}, 10, "c0", 5, false},
		{"bounded", "all 1000 lines read, the newest maxAuditRows shown", 1 << 20, auditFilter{}, 1000, "c0", maxAuditRows, true},
		{"caller", "the caller filter over everything", 1 << 20, auditFilter{Caller: "c1"}, 1000, "c1", 333, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tail, err := tailOf(f, c.window, c.sel)
			if err != nil {
				t.Fatal(err)
			}
			if tail.Scanned != c.scanned || len(tail.Lines) != c.rows || tail.Truncated != c.truncated {
				t.Fatalf("scanned %d, %d rows, truncated %t; want %d, %d, %t (%s)", tail.Scanned, len(tail.Lines), tail.Truncated, c.scanned, c.rows, c.truncated, c.reason)
			}
			if tail.Lines[0].CallerSubject != c.first {
				t.Errorf("newest row's caller %q, want %q", tail.Lines[0].CallerSubject, c.first)
			}
		})
	}
}
