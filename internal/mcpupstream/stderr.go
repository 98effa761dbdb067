package mcpupstream

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Bounds of a stdio server's stderr in the gateway's log: a line longer
// than maxStderrLine is cut, and beyond stderrLinesPerSecond a second the
// lines are counted, not logged (the next logged line says how many).
const (
	maxStderrLine        = 1024
	stderrLinesPerSecond = 20
)

// StderrLog is an io.Writer for a stdio server's stderr that logs each
// line (at Info, with the server's name) within the bounds above, so a
// server that fails to start can be diagnosed and a chatty one cannot
// flood the log. No library bounds slog output per source, hence this.
func StderrLog(log *slog.Logger, server string) io.Writer {
	return &stderrLog{log: log, server: server, now: time.Now}
}

type stderrLog struct {
	log    *slog.Logger
	server string
	now    func() time.Time

	mu         sync.Mutex
	partial    []byte // the current line so far (at most maxStderrLine)
	cut        bool   // the current line was longer
	window     time.Time
	inWindow   int
	suppressed int
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(w.partial); len(chunk) > room {
			w.partial = append(w.partial, chunk[:room]...)
			w.cut = true
		} else {
			w.partial = append(w.partial, chunk...)
		}
		if i < 0 {
			break
		}
		w.line()
		p = p[i+1:]
	}
	return n, nil
}

// line logs the current line (w.mu held) and starts the next.
func (w *stderrLog) line() {
	now := w.now()
	if now.Sub(w.window) >= time.Second {
		w.window, w.inWindow = now, 0
	}
	w.inWindow++
	if w.inWindow > stderrLinesPerSecond {
		w.suppressed++
	} else {
		attrs := []any{"server", w.server, "line", string(bytes.TrimRight(w.partial, "\r"))}
		if w.cut {
			attrs = append(attrs, "cut_at_bytes", maxStderrLine)
		}
		if w.suppressed > 0 {
			attrs = append(attrs, "lines_suppressed_before", w.suppressed)
			w.suppressed = 0
		}
		w.log.Info("mcp stdio server stderr", attrs...)
	}
	w.partial, w.cut = w.partial[:0], false
}
