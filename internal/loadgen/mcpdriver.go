package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// The MCP load driver speaks raw JSON-RPC over net/http rather than through
// the go-sdk client: it shares the machine's CPU with what it measures, and
// the SDK client allocates ~450 KB a call (BENCHMARKS.md) where this
// reuses its buffers and decodes only the answer's first content block.

// MCPProtocolVersion is the revision the driver initializes with: one the
// go-sdk v1.8.0 server, the gateway's MCP face and mark3labs/mcp-go all serve.
const MCPProtocolVersion = "2025-06-18"

// maxMCPResponse bounds one answer the driver reads (a whole SSE stream or
// JSON body): a misbehaving target cannot make it buffer without end.
const maxMCPResponse = 1 << 20

// MCPConfig is one MCP target.
type MCPConfig struct {
	URL string // streamable-HTTP endpoint
	// Tool is the name called; Arguments its arguments (a JSON object).
	Tool      string
	Arguments json.RawMessage
	// Expect is the JSON value the answer's first content block (text) must
	// hold: compared byte for byte first, then as decoded JSON values.
	Expect json.RawMessage
	// Header is sent on every request (e.g. X-API-Key).
	Header http.Header
	// Sessions is how many MCP sessions are opened, each used by one call
	// at a time: the closed loop's concurrency.
	Sessions int
	// InitTimeout bounds opening each session.
	InitTimeout time.Duration
}

// MCPTarget drives tools/call over a pool of sessions.
type MCPTarget struct {
	cfg        MCPConfig
	client     *http.Client
	transport  *http.Transport
	pool       chan *mcpSession
	sessions   []*mcpSession
	expectText []byte
	expectVal  any
	name       []byte // cfg.Tool as a JSON string
}

type mcpSession struct {
	t       *MCPTarget
	id      string // Mcp-Session-Id; "" for a stateless server
	header  http.Header
	next    int64
	body    bytes.Buffer
	br      *bufio.Reader
	scratch []byte
	reply   mcpReply
}

// mcpReply is the part of a JSON-RPC answer the driver reads.
type mcpReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError         bool   `json:"isError"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
}

// NewMCPTarget opens cfg.Sessions sessions (initialize, then
// notifications/initialized), over HTTP/1.1 keep-alive.
func NewMCPTarget(ctx context.Context, cfg MCPConfig) (*MCPTarget, error) {
	if cfg.Sessions < 1 {
		return nil, fmt.Errorf("loadgen: %d MCP sessions: want at least 1", cfg.Sessions)
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 5 * time.Second
	}
	var expect any
	if err := json.Unmarshal(cfg.Expect, &expect); err != nil {
		return nil, fmt.Errorf("loadgen: the expected answer is not JSON: %v", err)
	}
	if !json.Valid(cfg.Arguments) || len(bytes.TrimSpace(cfg.Arguments)) == 0 || bytes.TrimSpace(cfg.Arguments)[0] != '{' {
		return nil, errors.New("loadgen: the MCP arguments must be a JSON object")
	}
	name, _ := json.Marshal(cfg.Tool)
	tr := &http.Transport{
		// HTTP/1.1 only (an empty TLSNextProto turns HTTP/2 off), a kept
		// connection for every session, nothing compressed.
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:        cfg.Sessions * 2,
		MaxIdleConnsPerHost: cfg.Sessions * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	t := &MCPTarget{cfg: cfg, transport: tr, client: &http.Client{Transport: tr},
		pool: make(chan *mcpSession, cfg.Sessions), expectText: cfg.Expect, expectVal: expect, name: name}
	// Opened all at once, so each takes a connection of its own: the
	// measured window then starts with as many kept connections as calls
	// in flight, and an upstream called directly counts none of the
	// driver's as new.
	t.sessions = make([]*mcpSession, cfg.Sessions)
	errs := make([]error, cfg.Sessions)
	var wg sync.WaitGroup
	for i := range t.sessions {
		t.sessions[i] = &mcpSession{t: t, br: bufio.NewReaderSize(nil, 16<<10)}
		wg.Go(func() { errs[i] = t.sessions[i].open(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Close()
		return nil, err
	}
	for _, s := range t.sessions {
		t.pool <- s
	}
	return t, nil
}

// Call makes one tools/call on a free session and checks its answer.
func (t *MCPTarget) Call(ctx context.Context) error {
	var s *mcpSession
	select {
	case s = <-t.pool:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { t.pool <- s }()
	return s.call(ctx)
}

// Close ends the sessions (DELETE, best effort, briefly) and the
// connections.
func (t *MCPTarget) Close() {
	for _, s := range t.sessions {
		if s.id == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.cfg.URL, nil)
		if err == nil {
			req.Header = s.header.Clone()
			if resp, err := t.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMCPResponse))
				resp.Body.Close()
			}
		}
		cancel()
	}
	t.transport.CloseIdleConnections()
}

func (s *mcpSession) open(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.t.cfg.InitTimeout)
	defer cancel()
	s.header = http.Header{}
	for k, v := range s.t.cfg.Header {
		s.header[k] = v
	}
	s.header.Set("Content-Type", "application/json")
	s.header.Set("Accept", "application/json, text/event-stream")
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + MCPProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"flowdrop-loadgen","version":"1"}}}`
	s.body.Reset()
	s.body.WriteString(init)
	resp, err := s.post(ctx)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	err = s.read(resp, []byte("0"))
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if s.reply.Error != nil {
		return fmt.Errorf("initialize: JSON-RPC error %d: %s", s.reply.Error.Code, s.reply.Error.Message)
	}
	version := MCPProtocolVersion
	if s.reply.Result != nil && s.reply.Result.ProtocolVersion != "" {
		version = s.reply.Result.ProtocolVersion
	}
	if s.id != "" {
		s.header.Set("Mcp-Session-Id", s.id)
	}
	s.header.Set("MCP-Protocol-Version", version)
	s.body.Reset()
	s.body.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, err = s.post(ctx)
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMCPResponse))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	s.next = 1
	return nil
}

// post sends s.body with the session's headers.
func (s *mcpSession) post(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.t.cfg.URL, bytes.NewReader(s.body.Bytes()))
	if err != nil {
		return nil, err
	}
	// One call at a time per session, and the transport does not write to
	// a request's header: the session's map is shared by its requests.
	req.Header = s.header
	return s.t.client.Do(req)
}

func (s *mcpSession) call(ctx context.Context) error {
	id := s.next
	s.next++
	s.body.Reset()
	s.body.WriteString(`{"jsonrpc":"2.0","id":`)
	want := strconv.AppendInt(nil, id, 10)
	s.body.Write(want)
	s.body.WriteString(`,"method":"tools/call","params":{"name":`)
	s.body.Write(s.t.name)
	s.body.WriteString(`,"arguments":`)
	s.body.Write(s.t.cfg.Arguments)
	s.body.WriteString(`}}`)
	resp, err := s.post(ctx)
	if err != nil {
		return err
	}
	if err := s.read(resp, want); err != nil {
		return err
	}
	return s.check()
}

// read reads the answer to id from resp (a JSON body or an SSE stream)
// into s.reply, then the rest of the body, so the connection is reused.
func (s *mcpSession) read(resp *http.Response, id []byte) error {
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxMCPResponse)
	defer func() { _, _ = io.Copy(io.Discard, body) }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		return s.decode(b, id)
	case "text/event-stream":
		return s.readSSE(body, id)
	}
	return fmt.Errorf("answer of Content-Type %q: want application/json or text/event-stream", ct)
}

var errNotOurs = errors.New("not the answer awaited")

// decode reads one JSON-RPC message into s.reply; errNotOurs if it is not
// the answer to id (a notification or another request on the stream).
func (s *mcpSession) decode(msg, id []byte) error {
	s.reply = mcpReply{}
	if err := json.Unmarshal(msg, &s.reply); err != nil {
		return fmt.Errorf("answer is not JSON-RPC: %v", err)
	}
	if s.reply.Method != "" || !bytes.Equal(bytes.TrimSpace(s.reply.ID), id) {
		return errNotOurs
	}
	return nil
}

// readSSE reads server-sent events until the one answering id.
func (s *mcpSession) readSSE(body io.Reader, id []byte) error {
	s.br.Reset(body)
	var data []byte
	for {
		line, err := s.readLine()
		if err != nil && err != io.EOF {
			return err
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		// A blank line (or the stream's end) dispatches the event.
		if (len(line) == 0 || err == io.EOF) && len(data) > 0 {
			switch derr := s.decode(data, id); {
			case derr == nil:
				return nil
			case !errors.Is(derr, errNotOurs):
				return derr
			}
			data = data[:0]
		}
		if err == io.EOF {
			return errors.New("the event stream ended without the answer")
		}
	}
}

// readLine returns the next line without its line ending (valid until the
// next call), and io.EOF with the last one.
func (s *mcpSession) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.scratch = append(s.scratch[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.br.ReadSlice('\n')
			s.scratch = append(s.scratch, line...)
		}
		line = s.scratch
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), err
}

// check holds s.reply to the expected answer.
func (s *mcpSession) check() error {
	r := s.reply
	switch {
	case r.Error != nil:
		return fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return errors.New("answer without a result")
	case len(r.Result.Content) == 0 || r.Result.Content[0].Type != "text":
		return errors.New("answer's first content block is not text")
	}
	text := r.Result.Content[0].Text
	if r.Result.IsError {
		return fmt.Errorf("tool error: %.200s", text)
	}
	if text == string(s.t.expectText) {
		return nil
	}
	var got any
	if err := json.Unmarshal([]byte(text), &got); err == nil && reflect.DeepEqual(got, s.t.expectVal) {
		return nil
	}
	return fmt.Errorf("answer differs from the expected: %.200s", text)
}
