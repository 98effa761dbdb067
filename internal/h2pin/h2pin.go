package h2pin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Options say what to open.
type Options struct {
	// Addr is the server's host:port (plaintext HTTP/2, prior knowledge).
	Addr string
	// Method is the full gRPC method path, e.g. "/pkg.Service/Method".
	Method string
	// Streams is how many streams to open.
	Streams int
	// MessageBytes is the length each message announces; the client sends
	// at most all but its last byte.
	MessageBytes int
	// Metadata is sent on every stream's headers (credentials, say).
	Metadata map[string]string
	// Settle is how long sending waits for a window to open before it
	// counts what it could send as all it can (default 500ms).
	Settle time.Duration
}

// Stream is what became of one stream.
type Stream struct {
	// Sent is how many bytes of the message (its 5-byte prefix included)
	// the server's windows let through.
	Sent int
	// Ended is set once the server ended the stream: a status in trailers
	// (GRPCStatus) or RST_STREAM (Reset).
	Ended      bool
	GRPCStatus int // -1 while none
	Message    string
	Reset      bool
}

// Conn is one connection holding unfinished messages. Close releases it.
type Conn struct {
	nc   net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex // guards writes on fr
	opts Options

	mu       sync.Mutex
	cond     *sync.Cond
	connWin  int
	initWin  int
	streams  map[uint32]*stream
	order    []uint32
	goaway   bool
	readErr  error
	readDone chan struct{}
}

type stream struct {
	Stream
	win int
}

var zeros = make([]byte, 16<<10)

// Open dials, opens the streams, sends what the windows allow and returns
// with the connection held open (its pings answered) until Close.
func Open(ctx context.Context, o Options) (*Conn, error) {
	if o.Settle <= 0 {
		o.Settle = 500 * time.Millisecond
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, fr: http2.NewFramer(nc, nc), opts: o, connWin: 65535, initWin: 65535,
		streams: map[uint32]*stream{}, readDone: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.write(func() error { return c.fr.WriteSettings() }); err != nil {
		nc.Close()
		return nil, err
	}
	go c.read()
	if err := c.openStreams(); err != nil {
		c.Close()
		return nil, err
	}
	c.send()
	return c, nil
}

func (c *Conn) write(f func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return f()
}

func (c *Conn) openStreams() error {
	host, _, _ := net.SplitHostPort(c.opts.Addr)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range c.opts.Streams {
		id := uint32(2*i + 1)
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", c.opts.Method},
			{":authority", host}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		for k, v := range c.opts.Metadata {
			enc.WriteField(hpack.HeaderField{Name: k, Value: v})
		}
		c.mu.Lock()
		c.streams[id] = &stream{Stream: Stream{GRPCStatus: -1}, win: c.initWin}
		c.order = append(c.order, id)
		c.mu.Unlock()
		if err := c.write(func() error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
		}); err != nil {
			return err
		}
	}
	return nil
}

// send writes message bytes wherever the windows allow until nothing has
// moved for Settle.
func (c *Conn) send() {
	total := 5 + c.opts.MessageBytes - 1
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], uint32(c.opts.MessageBytes))
	for {
		c.mu.Lock()
		var id uint32
		var n int
		for _, sid := range c.order {
			s := c.streams[sid]
			if s.Ended || s.Sent >= total || s.win <= 0 || c.connWin <= 0 {
				continue
			}
			id, n = sid, min(total-s.Sent, s.win, c.connWin, len(zeros))
			break
		}
		if id == 0 {
			if c.goaway || c.readErr != nil || !c.waitLocked(c.opts.Settle) {
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			continue
		}
		s := c.streams[id]
		chunk := zeros[:n]
		if s.Sent < 5 { // the length prefix first
			chunk = append(prefix[s.Sent:5:5], zeros[:max(0, n-(5-s.Sent))]...)
			chunk = chunk[:n]
		}
		s.Sent += n
		s.win -= n
		c.connWin -= n
		c.mu.Unlock()
		if err := c.write(func() error { return c.fr.WriteData(id, false, chunk) }); err != nil {
			return
		}
	}
}

// waitLocked waits for a frame to change something, at most d; false when
// nothing did.
func (c *Conn) waitLocked(d time.Duration) bool {
	timedOut := false // set under c.mu by the timer
	t := time.AfterFunc(d, func() { c.mu.Lock(); timedOut = true; c.cond.Broadcast(); c.mu.Unlock() })
	defer t.Stop()
	for !timedOut && c.readErr == nil {
		before, sum := c.connWin, c.windowSum()
		c.cond.Wait()
		if c.connWin != before || c.windowSum() != sum {
			return true
		}
	}
	return false
}

func (c *Conn) windowSum() int {
	n := 0
	for _, s := range c.streams {
		if !s.Ended {
			n += s.win
		}
	}
	return n
}

func (c *Conn) read() {
	defer close(c.readDone)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			c.mu.Lock()
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				delta := int(v) - c.initWin
				c.initWin = int(v)
				for _, s := range c.streams {
					s.win += delta
				}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
			c.write(func() error { return c.fr.WriteSettingsAck() })
		case *http2.PingFrame:
			if !f.IsAck() {
				data := f.Data
				c.write(func() error { return c.fr.WritePing(true, data) })
			}
		case *http2.WindowUpdateFrame:
			c.mu.Lock()
			if f.StreamID == 0 {
				c.connWin += int(f.Increment)
			} else if s := c.streams[f.StreamID]; s != nil {
				s.win += int(f.Increment)
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		case *http2.MetaHeadersFrame:
			c.mu.Lock()
			if s := c.streams[f.StreamID]; s != nil {
				for _, hf := range f.Fields {
					switch hf.Name {
					case "grpc-status":
						s.GRPCStatus, _ = strconv.Atoi(hf.Value)
						s.Ended = true
					case "grpc-message":
						s.Message = hf.Value
					}
				}
				if f.StreamEnded() {
					s.Ended = true
				}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		case *http2.RSTStreamFrame:
			c.mu.Lock()
			if s := c.streams[f.StreamID]; s != nil {
				s.Ended, s.Reset = true, true
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		case *http2.GoAwayFrame:
			c.mu.Lock()
			c.goaway = true
			c.cond.Broadcast()
			c.mu.Unlock()
		}
	}
}

// Streams reports each stream, in the order opened.
func (c *Conn) Streams() []Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Stream, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.streams[id].Stream)
	}
	return out
}

// Sent is the message bytes sent on all streams.
func (c *Conn) Sent() int {
	n := 0
	for _, s := range c.Streams() {
		n += s.Sent
	}
	return n
}

// Closed reports why the connection's reading ended (nil while open).
func (c *Conn) Closed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// WaitEnded waits until every stream has ended or the connection is
// closed, or ctx is done.
func (c *Conn) WaitEnded(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.readErr != nil {
			return nil
		}
		open := 0
		for _, s := range c.streams {
			if !s.Ended {
				open++
			}
		}
		if open == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d streams still open: %w", open, len(c.streams), ctx.Err())
		}
		c.cond.Wait()
	}
}

// Close closes the connection.
func (c *Conn) Close() error {
	err := c.nc.Close()
	<-c.readDone
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
