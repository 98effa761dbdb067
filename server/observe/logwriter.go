package observe

import (
	"errors"
	"io"
	"sync"
	"time"
)

// LogWriter batches the process's log lines: a Write copies its line into
// a bounded buffer and returns; one goroutine writes what has gathered
// with one write(2) at most every FlushEvery (sooner once FlushBytes are
// waiting). Under load the gateway logs one access line per call, and a
// write(2) per line cost 5–6 % of its CPU (BENCHMARKS.md, "Where the gRPC
// gateway's time goes"); batched, the lines of a few milliseconds share
// one.
//
// Bounded: when MaxBytes are waiting (the output does not keep up: a
// stalled pipe, a slow terminal) further lines are dropped whole, never
// blocking a call, and counted; the batch written next is followed by the
// line Dropped makes of the count. Close writes what is
// waiting; a line written after Close goes straight to the output.
//
// Each Write must be one whole line (slog's handlers write a record with
// one Write), so a dropped line is a whole line.
type LogWriter struct {
	w   io.Writer
	opt LogWriterOptions

	mu      sync.Mutex
	buf     []byte // waiting to be written
	dropped int64  // lines dropped since the last note
	total   int64  // lines dropped since the start
	closed  bool

	wake      chan struct{} // a line is waiting (cap 1)
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// LogWriterOptions configures a LogWriter; zero fields take the defaults.
type LogWriterOptions struct {
	// FlushEvery is the longest a line waits before its write (default
	// 5ms): the delay a reader of the log sees.
	FlushEvery time.Duration
	// FlushBytes writes at once when this much is waiting (default 64 KiB).
	FlushBytes int
	// MaxBytes bounds what may wait (default 1 MiB); lines past it are
	// dropped.
	MaxBytes int
	// Dropped makes the line that reports n lines dropped (nil: no line;
	// they are still counted in DroppedLines).
	Dropped func(n int64) []byte
	// CloseWait bounds how long Close waits for a write the output does
	// not take (default 5s), so a stalled stderr cannot hold the process
	// at exit; what was waiting is then lost.
	CloseWait time.Duration
}

// The defaults of LogWriterOptions.
const (
	DefaultLogFlushEvery = 5 * time.Millisecond
	DefaultLogFlushBytes = 64 << 10
	DefaultLogMaxBytes   = 1 << 20
	DefaultLogCloseWait  = 5 * time.Second
)

// ErrLogStalled is Close's error when the output did not take the last
// lines within CloseWait.
var ErrLogStalled = errors.New("log: output stalled; lines waiting were not written")

// NewLogWriter starts a LogWriter in front of w; Close stops it.
func NewLogWriter(w io.Writer, opt LogWriterOptions) *LogWriter {
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = DefaultLogFlushEvery
	}
	if opt.FlushBytes <= 0 {
		opt.FlushBytes = DefaultLogFlushBytes
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultLogMaxBytes
	}
	if opt.CloseWait <= 0 {
		opt.CloseWait = DefaultLogCloseWait
	}
	l := &LogWriter{w: w, opt: opt, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// Write queues p (one line) and returns len(p), nil; it never blocks on
// the output.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.w.Write(p)
	}
	if len(l.buf)+len(p) > l.opt.MaxBytes {
		l.dropped++
		l.total++
		l.mu.Unlock()
		return len(p), nil
	}
	first := len(l.buf) == 0
	l.buf = append(l.buf, p...)
	full := len(l.buf) >= l.opt.FlushBytes
	l.mu.Unlock()
	if first || full {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// run writes what gathers: woken by the first line of a batch, it waits
// FlushEvery (or until FlushBytes are waiting) and writes everything.
func (l *LogWriter) run() {
	defer close(l.done)
	var spare []byte
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-l.wake:
		case <-l.stop:
			l.flush(&spare)
			return
		}
		t.Reset(l.opt.FlushEvery)
	gather:
		for !l.full() {
			select {
			case <-t.C:
				break gather
			case <-l.wake: // FlushBytes reached, or a stale wake-up
			case <-l.stop:
				t.Stop()
				l.flush(&spare)
				return
			}
		}
		t.Stop()
		l.flush(&spare)
	}
}

// full reports whether FlushBytes are waiting.
func (l *LogWriter) full() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buf) >= l.opt.FlushBytes
}

// flush writes what is waiting and the note of lines dropped since the
// last flush. The buffers swap, so lines keep arriving during the write.
func (l *LogWriter) flush(spare *[]byte) {
	l.mu.Lock()
	out, dropped, note := l.buf, l.dropped, l.opt.Dropped
	l.buf, l.dropped = (*spare)[:0], 0
	l.mu.Unlock()
	l.writeOut(out, dropped, note)
	if cap(out) > 4*l.opt.FlushBytes { // a burst's buffer is not kept
		out = nil
	}
	*spare = out
}

// SetDropped sets LogWriterOptions.Dropped (the log's format may be
// chosen after its output).
func (l *LogWriter) SetDropped(f func(n int64) []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opt.Dropped = f
}

// writeOut writes out, then note's line for the lines dropped after them (a
// line is dropped only while the buffer is full, so the lines it holds
// came before). As with slog's handlers, a failed log write has no one to
// tell.
func (l *LogWriter) writeOut(out []byte, dropped int64, note func(int64) []byte) {
	if len(out) > 0 {
		_, _ = l.w.Write(out)
	}
	if dropped > 0 && note != nil {
		_, _ = l.w.Write(note(dropped))
	}
}

// DroppedLines is the number of lines dropped since the start.
func (l *LogWriter) DroppedLines() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Close writes what is waiting and stops the goroutine; later lines are
// written directly, after it. It waits at most CloseWait for the output
// (ErrLogStalled past it). Safe to call more than once.
func (l *LogWriter) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.stop)
		t := time.NewTimer(l.opt.CloseWait)
		defer t.Stop()
		select {
		case <-l.done: // its last flush
		case <-t.C:
			l.mu.Lock()
			l.closed, l.buf = true, nil // later lines try the output themselves
			l.mu.Unlock()
			err = ErrLogStalled
			return
		}
		// What came in since goes out now, under the lock, so a Write
		// made after Close (written directly) cannot overtake it.
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		l.writeOut(l.buf, l.dropped, l.opt.Dropped)
		l.buf, l.dropped = nil, 0
	})
	return err
}
