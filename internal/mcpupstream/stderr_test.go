package mcpupstream

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStderrLogIsBounded: lines are logged whole across writes, a long one
// is cut, and past the per-second bound lines are counted and the count
// reported with the next logged line.
func TestStderrLogIsBounded(t *testing.T) {
	var out bytes.Buffer
	w := StderrLog(slog.New(slog.NewTextHandler(&out, nil)), "files").(*stderrLog)
	now := time.Unix(1000, 0)
	w.now = func() time.Time { return now }

	w.Write([]byte("starting "))
	w.Write([]byte("up\nlong:" + strings.Repeat("x", 3*maxStderrLine) + "\n"))
	if got := out.String(); !strings.Contains(got, `line="starting up"`) || !strings.Contains(got, "cut_at_bytes=1024") ||
		strings.Contains(got, strings.Repeat("x", maxStderrLine)) {
		t.Fatalf("log %s: want the line joined across writes and the long one cut", got)
	}
	for range 3 * stderrLinesPerSecond {
		w.Write([]byte("chatty\n"))
	}
	if n := strings.Count(out.String(), "chatty"); n != stderrLinesPerSecond-2 {
		t.Errorf("%d chatty lines logged in one second; want %d (the bound, less the two before)", n, stderrLinesPerSecond-2)
	}
	now = now.Add(time.Second)
	w.Write([]byte("later\n"))
	if !strings.Contains(out.String(), "lines_suppressed_before=42") || !strings.Contains(out.String(), `line=later`) {
		t.Errorf("log %s: want the next second's line with the 42 suppressed", out.String())
	}
}
