package pipeline

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// TestProgressSinkBounds: what a sink relays of a backend's progress is
// bounded however the backend reports it.
func TestProgressSinkBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		reports []Progress
		close   int // Close before this report (-1: never)
		want    int
	}{
		{reason: "increasing reports within the burst all pass", reports: steps(3), close: -1, want: 3},
		{reason: "a flood passes only the burst at once", reports: steps(1000), close: -1, want: ProgressBurst},
		{reason: "a repeated or decreasing value is no progress", reports: []Progress{{Progress: 2}, {Progress: 2}, {Progress: 1}, {Progress: 3}}, close: -1, want: 2},
		{reason: "NaN, infinities and a negative total are refused", reports: []Progress{{Progress: math.NaN()}, {Progress: math.Inf(1)}, {Progress: 1, Total: -1}, {Progress: 1, Total: math.Inf(1)}}, close: -1, want: 0},
		{reason: "nothing after Close", reports: steps(3), close: 1, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			var got []Progress
			s := NewProgressSink(func(p Progress) { got = append(got, p) })
			// One instant: a loaded machine taking longer than
			// ProgressInterval over the reports must not refill the burst.
			at := time.Now()
			s.now = func() time.Time { return at }
			for i, p := range tc.reports {
				if i == tc.close {
					s.Close()
				}
				s.Report(p)
			}
			if len(got) != tc.want {
				t.Errorf("relayed %d of %d, want %d", len(got), len(tc.reports), tc.want)
			}
		})
	}
}

// TestProgressSinkPerCallCap: a sink never relays more than
// ProgressMaxPerCall, however slowly they come (the limiter refilled).
func TestProgressSinkPerCallCap(t *testing.T) {
	t.Parallel()
	n := 0
	s := NewProgressSink(func(Progress) { n++ })
	s.rate.SetLimit(rate.Inf) // as if every report came after a long pause
	for i := 1; i <= 10*ProgressMaxPerCall; i++ {
		s.Report(Progress{Progress: float64(i)})
	}
	if n != ProgressMaxPerCall {
		t.Errorf("relayed %d, want %d", n, ProgressMaxPerCall)
	}
}

// TestProgressSinkMessageCap: a long message is cut to ProgressMaxMessage
// bytes on a rune boundary.
func TestProgressSinkMessageCap(t *testing.T) {
	t.Parallel()
	var got string
	s := NewProgressSink(func(p Progress) { got = p.Message })
	s.Report(Progress{Progress: 1, Message: "a" + strings.Repeat("é", ProgressMaxMessage)})
	if len(got) > ProgressMaxMessage || len(got) < ProgressMaxMessage-utf8.UTFMax || !utf8.ValidString(got) {
		t.Errorf("message of %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), ProgressMaxMessage)
	}
}

func steps(n int) []Progress {
	ps := make([]Progress, n)
	for i := range ps {
		ps[i] = Progress{Progress: float64(i + 1), Total: float64(n)}
	}
	return ps
}
