package mcpupstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// errMalformedEvent is a stream the SDK would fail the session on: a line
// that is no field, or an event over the size bound.
var errMalformedEvent = errors.New("malformed event")

// event is one server-sent event; data is valid until the next one.
type event struct {
	name string
	data []byte
}

// eventScanner reads server-sent events as the SDK's scanEventsLimited does
// (its rules, not the whole SSE specification: a line without a colon is
// malformed, field values are trimmed, "id" and "retry" are read past — a
// call's stream is not resumed, as the SDK's sessions resume none with
// MaxRetries -1), from pooled buffers.
type eventScanner struct {
	r       *bufio.Reader
	data    *bytes.Buffer
	line    []byte
	max     int // bytes of one event; < 0: no bound
	evBytes int
	eof     bool
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

func newEventScanner(r io.Reader, max int) *eventScanner {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &eventScanner{r: br, data: getBuffer(), max: max}
}

// release returns the buffers; the scanner is not used after.
func (s *eventScanner) release() {
	s.r.Reset(nil)
	readers.Put(s.r)
	putBuffer(s.data)
}

// next is the next event with a name or data; io.EOF at the stream's end.
func (s *eventScanner) next() (event, error) {
	var ev event
	hasData := false
	s.data.Reset()
	for {
		if s.eof {
			return event{}, io.EOF
		}
		line, err := s.readLine()
		if errors.Is(err, errMalformedEvent) {
			return event{}, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return event{}, fmt.Errorf("error reading event: %v", err)
		}
		s.evBytes += len(line)
		line = bytes.TrimRight(line, "\r\n")
		if errors.Is(err, io.EOF) {
			s.eof = true
		}
		if len(line) == 0 {
			s.evBytes = 0
			if hasData {
				ev.data = s.data.Bytes()
			}
			if ev.name != "" || len(ev.data) > 0 || hasData {
				return ev, nil
			}
			continue
		}
		before, after, found := bytes.Cut(line, []byte{':'})
		if !found {
			return event{}, fmt.Errorf("%w: malformed line in SSE stream: %q", errMalformedEvent, string(line))
		}
		switch string(before) {
		case "event":
			ev.name = string(bytes.TrimSpace(after))
		case "data":
			if hasData {
				s.data.WriteByte('\n')
			}
			hasData = true
			s.data.Write(bytes.TrimSpace(after))
		}
		if s.eof {
			if hasData {
				ev.data = s.data.Bytes()
			}
			if ev.name != "" || hasData {
				return ev, nil
			}
			return event{}, io.EOF
		}
	}
}

// readLine is the next line, its end included, within what is left of the
// event's bound; valid until the next read. A line the reader's buffer
// holds whole (an answer's data line, usually) is that buffer, not a copy.
func (s *eventScanner) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if s.max >= 0 && s.evBytes+len(s.line)+len(frag) > s.max {
			return nil, fmt.Errorf("%w: SSE event exceeded %d bytes without terminating", errMalformedEvent, s.max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line = append(s.line, frag...)
			continue
		}
		if len(s.line) == 0 {
			return frag, err
		}
		s.line = append(s.line, frag...)
		return s.line, err
	}
}
