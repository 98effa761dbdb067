package observe

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter records every write it is given; when gate is set, a
// write first says so on entered and then waits for gate to close.
type countingWriter struct {
	mu      sync.Mutex
	writes  []string
	gate    chan struct{}
	entered chan struct{}
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.gate != nil {
		select {
		case c.entered <- struct{}{}:
		default:
		}
		<-c.gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func (c *countingWriter) all() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.writes, ""), len(c.writes)
}

// A batch of lines reaches the output as one write, whole and in order:
// a handler writing straight to the output makes one write per line.
func TestLogWriterBatchesLines(t *testing.T) {
	out := &countingWriter{}
	// Nothing flushes before Close: the test does not depend on timing.
	lw := NewLogWriter(out, LogWriterOptions{FlushEvery: time.Hour, FlushBytes: 1 << 20, MaxBytes: 2 << 20})
	var want bytes.Buffer
	direct := slog.New(slog.NewTextHandler(&want, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	log := slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	for i := range 200 {
		log.Info("finished call", "i", i)
		direct.Info("finished call", "i", i)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	got, writes := out.all()
	if got != want.String() {
		t.Fatalf("output differs from the lines written\ngot:\n%.300s\nwant:\n%.300s", got, want.String())
	}
	if writes != 1 {
		t.Fatalf("200 lines took %d writes, want 1", writes)
	}
	if n := lw.DroppedLines(); n != 0 {
		t.Fatalf("%d lines dropped, want 0", n)
	}
	// After Close a line goes straight to the output.
	log.Info("after close")
	if got, writes := out.all(); writes != 2 || !strings.HasSuffix(got, "level=INFO msg=\"after close\"\n") {
		t.Fatalf("a line after Close: %d writes, output ends %q", writes, got[max(0, len(got)-60):])
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// An output that does not keep up never blocks a caller: past MaxBytes
// waiting, whole lines are dropped and counted, and the output says how
// many after the lines it kept.
func TestLogWriterDropsWholeLinesWhenTheOutputStalls(t *testing.T) {
	out := &countingWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	lw := NewLogWriter(out, LogWriterOptions{FlushEvery: time.Hour, FlushBytes: 10, MaxBytes: 100,
		Dropped: func(n int64) []byte { return fmt.Appendf(nil, "dropped %d\n", n) }})
	line := func(i int) string { return fmt.Sprintf("line %03d ......\n", i) } // 16 bytes
	if _, err := lw.Write([]byte(line(0))); err != nil {
		t.Fatal(err)
	}
	<-out.entered // line 0 is being written, and the output hangs
	for i := 1; i <= 20; i++ {
		if n, err := lw.Write([]byte(line(i))); n != 16 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	// 100 bytes hold six 16-byte lines: 1–6 wait, 7–20 are dropped.
	if n := lw.DroppedLines(); n != 14 {
		t.Fatalf("DroppedLines = %d, want 14", n)
	}
	close(out.gate)
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write([]byte(line(21))); err != nil {
		t.Fatal(err)
	}
	got, _ := out.all()
	want := line(0)
	for i := 1; i <= 6; i++ {
		want += line(i)
	}
	want += "dropped 14\n" + line(21)
	if got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}

// Lines written concurrently with Close are all written, none twice.
func TestLogWriterCloseWritesEverything(t *testing.T) {
	out := &countingWriter{}
	lw := NewLogWriter(out, LogWriterOptions{FlushEvery: time.Microsecond, FlushBytes: 64})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(lw, "w%d-%d\n", w, i)
			}
		})
	}
	wg.Wait()
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := out.all()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if seen[l] {
			t.Fatalf("line %q written twice", l)
		}
		seen[l] = true
	}
	if len(seen) != 2000 {
		t.Fatalf("%d distinct lines written, want 2000", len(seen))
	}
}

// A stalled output cannot hold the process at exit: Close gives up after
// CloseWait and says so.
func TestLogWriterCloseDoesNotWaitForeverOnAStalledOutput(t *testing.T) {
	out := &countingWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(out.gate) // the writer goroutine's write returns at the end
	lw := NewLogWriter(out, LogWriterOptions{FlushEvery: time.Hour, FlushBytes: 1, CloseWait: time.Millisecond})
	if _, err := lw.Write([]byte("stuck\n")); err != nil {
		t.Fatal(err)
	}
	<-out.entered
	if err := lw.Close(); err != ErrLogStalled {
		t.Fatalf("Close = %v, want ErrLogStalled", err)
	}
}
