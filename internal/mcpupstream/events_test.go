package mcpupstream

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestEventScannerLines: events whose data line fits the reader's buffer
// and one that does not (read in fragments) come out whole, and a line the
// buffer holds is not copied on the way: scanning an answer's 3 KB event
// allocates far less than the event.
func TestEventScannerLines(t *testing.T) {
	for _, tc := range []struct {
		name, data, reason string
	}{
		{"short", `{"jsonrpc":"2.0","id":"1","result":{}}`, "a small answer"},
		{"within the buffer", `{"t":"` + strings.Repeat("x", 3000) + `"}`, "the echo's answer size: one fragment"},
		{"over the buffer", `{"t":"` + strings.Repeat("y", 10000) + `"}`, "read in fragments past the 4 KiB buffer"},
	} {
		stream := "event: message\ndata: " + tc.data + "\n\n"
		s := newEventScanner(strings.NewReader(stream), 1<<20)
		ev, err := s.next()
		if err != nil || ev.name != "message" || string(ev.data) != tc.data {
			t.Errorf("%s: event %q %.60q, %v; want message with the data (%s)", tc.name, ev.name, ev.data, err, tc.reason)
		}
		if _, err := s.next(); err != io.EOF {
			t.Errorf("%s: after the event: %v, want EOF", tc.name, err)
		}
		s.release()
	}

	if raceEnabled {
		t.Skip("the race detector's pools drop buffers: allocation is checked without -race (.ci/run)")
	}
	stream := []byte("event: message\ndata: {\"t\":\"" + strings.Repeat("x", 3000) + "\"}\n\n")
	r := bytes.NewReader(stream)
	scan := func() {
		r.Reset(stream)
		s := newEventScanner(r, 1<<20)
		if _, err := s.next(); err != nil {
			t.Fatal(err)
		}
		s.release()
	}
	scan() // the pools filled
	const runs = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		scan()
	}
	runtime.ReadMemStats(&after)
	if perScan := (after.TotalAlloc - before.TotalAlloc) / runs; perScan > 1024 {
		t.Errorf("scanning a 3 KB event allocated %d bytes, want under 1 KB: its line copied?", perScan)
	}
}
